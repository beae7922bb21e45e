package queue

// Periodic jobs, scheduled by the worker process itself (package jobs).

// HousekeepingArgs is the periodic housekeeping job.
type HousekeepingArgs struct{}

// Kind names the job in River.
func (HousekeepingArgs) Kind() string { return "housekeeping" }

// AccountSweepArgs is the periodic job that activates sender numbers waiting
// for their owner's network account to be verified.
type AccountSweepArgs struct{}

// Kind names the job in River.
func (AccountSweepArgs) Kind() string { return "sender_account_sweep" }

// KeyExpiryArgs is the periodic job that reports API keys about to expire
// (api_key.expiring).
type KeyExpiryArgs struct{}

// Kind names the job in River.
func (KeyExpiryArgs) Kind() string { return "api_key_expiry" }

// WebhookOutboxArgs is the periodic job that finds webhook outbox rows no
// process is expanding (webhooks.Service.SweepOutbox).
type WebhookOutboxArgs struct{}

// Kind names the job in River.
func (WebhookOutboxArgs) Kind() string { return "webhook_outbox_sweep" }
