package app

import (
	"context"
	"math"
	"time"

	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/central"
	"github.com/bizmsg/platform/jobs"
	"github.com/bizmsg/platform/platform/acceptance"
	"github.com/bizmsg/platform/platform/batch"
	"github.com/bizmsg/platform/platform/consent"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/delivery"
	"github.com/bizmsg/platform/platform/idempotency"
	"github.com/bizmsg/platform/platform/lookup"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/usage"
	"github.com/bizmsg/platform/tenant"
)

// idempotencyTTL is how long a send's Idempotency-Key is remembered.
const idempotencyTTL = 24 * time.Hour

// messaging builds the consent, acceptance, delivery, message, lookup and
// usage services (the message service's Routed on a Citus coordinator).
// The delivery throttle is the shared pace.Store: a
// sender's rate holds in total across every worker process.
func (a *App) messaging(ctx context.Context) error {
	var err error
	if a.Consent, err = consent.New(consent.Config{
		DB: a.DB, Jobs: a.Outbox, Network: a.Network, Events: a.Webhooks, Clock: a.clock, Logger: a.log,
	}); err != nil {
		return err
	}
	// One statement cache for the three stages of a message: each
	// connection keeps the statements of all of them, up to one bound.
	prep, err := a.newPrepared()
	if err != nil {
		return err
	}
	routed, err := a.Migrator.Citus(ctx) // on Citus: inbound stores and campaign ticks by routed statements
	if err != nil {
		return err
	}
	if a.Acceptance, err = acceptance.New(acceptance.Config{
		Prepared:       prep,
		Jobs:           a.Outbox,
		Senders:        a.Senders,
		Network:        a.Network,
		IdempotencyTTL: idempotencyTTL,
		ServiceWindow:  a.cfg.NetworkServiceWindow,
		Batch:          a.batches("accept"),
		ReleaseBatch:   a.batches("release"),
		Templates:      a.Templates,
		Clock:          a.clock,
		Events:         a.Webhooks,
		Routed:         routed,
	}); err != nil {
		return err
	}
	if a.Delivery, err = delivery.New(delivery.Config{
		DB:          a.DB,
		Prepared:    prep,
		Jobs:        a.River,
		Network:     a.Network,
		Throttle:    a.pace,
		SenderRate:  a.cfg.SenderRate,
		SenderBurst: a.cfg.SenderBurst,
		Batch:       a.batches("deliver"),
		ClaimLease:  a.jobs.DeliveryRescueAfter,
		Events:      a.Webhooks,
		Clock:       a.clock,
		Logger:      a.log,
	}); err != nil {
		return err
	}
	if a.Messages, err = messages.New(messages.Config{
		DB:       a.DB,
		Prepared: prep,
		Jobs:     a.River,
		Consent:  a.Consent,
		Events:   a.Webhooks,
		Clock:    a.clock,
		Logger:   a.log,
		Routed:   routed,
	}); err != nil {
		return err
	}
	if a.Lookup, err = lookup.New(lookup.Config{
		Network: a.Network, Senders: a.Senders, Contacts: a.Consent,
		ServiceWindow: a.cfg.NetworkServiceWindow, Clock: a.clock,
	}); err != nil {
		return err
	}
	a.Usage, err = usage.New(usage.Config{DB: a.DB, Clock: a.clock, Defaults: usage.Defaults{
		SenderRate:   a.cfg.SenderRate,
		SenderBurst:  a.cfg.SenderBurst,
		APIRateLimit: a.cfg.APIRateLimit,
		APIRateBurst: a.cfg.APIRateBurst,
	}})
	return err
}

// batches is the batch.Config of one kind of foreground statement
// (BATCH_SIZE): "accept", "release" and "deliver" (per tenant), "auth" (API keys),
// "lookup" and "network" (the built-in network's lookups and deliveries).
// Each run is counted in flight on a.yield (Load), through which webhook
// attempts give way to a busy API and send path, and its size observed by
// the batch_size metric.
func (a *App) batches(kind string) batch.Config {
	c := batch.Config{MaxSize: a.cfg.BatchSize, Load: a.yield, Sizes: a.Metrics.BatchSize.WithLabelValues(kind)}
	if a.cfg.BatchSize == 1 {
		// No batching: each call runs alone, with no bound of its own.
		c.MaxInFlight = math.MaxInt32
	}
	return c
}

// messagingRoutes mounts the messaging endpoints of both APIs.
func (a *App) messagingRoutes() {
	tenant.MountMessages(a.TenantRoutes, a.Acceptance, a.Messages)
	tenant.MountLookup(a.TenantRoutes, a.Lookup)
	tenant.MountOptOuts(a.TenantRoutes, a.Consent)
	tenant.MountUsage(a.TenantRoutes, a.Usage)
	central.MountMessaging(a.CentralRoutes, a.Messages, a.Usage)
}

// messagingWorkers registers the message delivery, the scheduled sends'
// release and the opt-out confirmation workers.
func (a *App) messagingWorkers(workers *river.Workers, cfg queue.Config) {
	river.AddWorker(workers, &jobs.NetworkWorker[queue.ConsentReplyArgs]{Call: a.Consent.SendReply})
	river.AddWorker(workers, &jobs.ReleaseWorker{Releaser: a.Acceptance, RunTimeout: cfg.ReleaseTimeout})
	river.AddWorker(workers, &jobs.DeliverWorker{
		Deliverer:  a.Delivery,
		RetryBase:  cfg.DeliveryRetryBase,
		RetryMax:   cfg.DeliveryRetryMax,
		RunTimeout: cfg.DeliveryTimeout,
	})
}

// purgeIdempotencyKeys deletes every tenant's idempotency keys older than
// their lifetime. A failing tenant does not stop the others.
func (a *App) purgeIdempotencyKeys(ctx context.Context, now time.Time) (int64, error) {
	return a.sumTenants(ctx, func(t db.Tenant) (int64, error) {
		return idempotency.Purge(ctx, a.DB, t, now.Add(-idempotencyTTL))
	})
}
