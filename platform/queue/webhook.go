package queue

import (
	"math/rand/v2"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// QueueWebhooks is the River queue of webhook deliveries. It has its own
// worker pool (Config.WebhookMaxWorkers): a webhook attempt may wait up to
// its timeout for an organization's server, and must never hold up message
// deliveries, OTPs or housekeeping.
const QueueWebhooks = "webhooks"

// DefaultWebhookMaxAttempts bounds a webhook delivery job's failed runs.
// The webhook service decides when a delivery has failed (24 hours after it
// was created); with its backoff (5 s doubling to at most 1 h) that takes
// about 33 failed attempts, so River's bound is a backstop far past it: a
// job that reaches it anyway marks its delivery failed.
const DefaultWebhookMaxAttempts = 100

// WebhookRetryBase and WebhookRetryMax are the backoff of a failed webhook
// attempt: WebhookRetryBase·2^(attempt-1), at most WebhookRetryMax, ±10%.
const (
	WebhookRetryBase = 5 * time.Second
	WebhookRetryMax  = time.Hour
)

// WebhookRetryIn is how long after a failed run of a webhook delivery job
// (run: its job and River's attempt count, that run included) the next is
// due: base·2^(attempt-1), at most maxDelay, ±10%, and not past until while
// until is ahead of now (the last retry comes at the end of the delivery's
// window). The jitter is drawn from the job and the attempt, not at
// random, so that the webhook service, which records the next attempt,
// and the worker's NextRetry, which schedules it, compute the same time
// from what each has, without handing it from one River callback to the
// other.
func WebhookRetryIn(run DeliveryAttempt, base, maxDelay time.Duration, until, now time.Time) time.Duration {
	u := rand.New(rand.NewPCG(uint64(run.JobID), uint64(run.Attempt))).Float64() //nolint:gosec // G404: retry jitter, not a secret
	d := backoff(run.Attempt, base, maxDelay, u)
	if left := until.Sub(now); !until.IsZero() && left > 0 && left < d {
		d = left
	}
	return d
}

// WebhookDeliveryArgs is the job that delivers one webhook delivery (an
// event to one endpoint). It is inserted in the transaction that writes the
// delivery: the transaction of the change the event reports, or a
// redelivery's.
type WebhookDeliveryArgs struct {
	TenantRef
	// DeliveryID is the delivery's id in the tenant schema.
	DeliveryID int64 `json:"delivery_id"`
	// EndpointID is the delivery's endpoint, so that the worker checks the
	// endpoint's limit of requests in flight before it reads anything.
	EndpointID int64 `json:"endpoint_id"`
	// RetryUntil is the end of the delivery's retry window (its creation
	// plus the service's RetryFor): no retry is scheduled past it
	// (WebhookRetryIn). Zero (a job inserted before it existed): no bound.
	RetryUntil time.Time `json:"retry_until,omitzero"`
}

// Kind names the job in River.
func (WebhookDeliveryArgs) Kind() string { return "webhook_delivery" }

// InsertOpts puts webhook deliveries on their own queue, one job per
// delivery while it is not finished: the job outbox may insert a job twice
// (docs/scaling.md, §Jobs), and two jobs of one delivery running at once
// would both post it. A redelivery makes a new delivery, whose job is new.
func (WebhookDeliveryArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueWebhooks, MaxAttempts: DefaultWebhookMaxAttempts, UniqueOpts: unfinished}
}

// unfinished makes a job unique by its arguments among the jobs that have
// not finished (River's states before completed, cancelled and discarded).
var unfinished = river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
	rivertype.JobStateRetryable, rivertype.JobStateScheduled,
}}

// WebhookDeliveryJob returns the insert parameters of args's job, for
// InsertManyFastTx.
func WebhookDeliveryJob(args WebhookDeliveryArgs) river.InsertManyParams {
	opts := args.InsertOpts()
	return river.InsertManyParams{Args: args, InsertOpts: &opts}
}
