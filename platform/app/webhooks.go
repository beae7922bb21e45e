package app

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/jobs"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/webhooks"
	"github.com/bizmsg/platform/tenant"
)

// webhookService builds the webhook service (docs/api.md, §Webhooks), which
// the services that emit events take, so it is built before them. Its
// jobs go through the job outbox a.Outbox, which must exist. WEBHOOK_ALLOW_PRIVATE turns
// on cfg.AllowPrivate (the service logs a warning then). Its attempts yield
// to the API and the send path through a.yield (WEBHOOK_BUSY_RATE), on
// which their batches count their runs (batches). On a Citus coordinator
// its outbox expansion runs as statements routed to the tenant's node
// (webhooks.Config.Routed).
func (a *App) webhookService(ctx context.Context, cfg webhooks.Config) error {
	if a.cfg.WebhookAllowPrivate {
		cfg.AllowPrivate = true
	}
	if cfg.Prepared == nil {
		var err error
		if cfg.Prepared, err = a.newPrepared(); err != nil {
			return err
		}
	}
	if cfg.Yield == nil {
		cfg.Yield = a.yield
	}
	a.Metrics.CountWebhookYields(cfg.Yield.Yields)
	cfg.DB, cfg.Jobs, cfg.Clock, cfg.Logger = a.DB, a.Outbox, a.clock, a.log
	var err error
	if !cfg.Routed {
		if cfg.Routed, err = a.Migrator.Citus(ctx); err != nil {
			return err
		}
	}
	if a.Webhooks, err = webhooks.New(cfg); err != nil {
		return err
	}
	a.Metrics.CountWebhookOutbox(a.Webhooks.OutboxExpanded, a.Webhooks.OutboxFailures)
	return nil
}

// webhookRoutes mounts the Tenant API's webhook endpoints.
func (a *App) webhookRoutes() {
	tenant.MountWebhooks(a.TenantRoutes, a.Webhooks)
}

// webhookWorkers registers the webhook delivery worker and the outbox
// sweep.
func (a *App) webhookWorkers(workers *river.Workers) {
	river.AddWorker(workers, &jobs.WebhookWorker{Attempter: a.Webhooks})
	river.AddWorker(workers, &jobs.WebhookOutboxWorker{Sweep: a.sweepOutboxes, Logger: a.log})
}

// sweepOutboxes wakes this process's expansion of every tenant whose
// webhook outbox holds rows (webhooks.Service.SweepOutbox) and its move of
// every tenant whose job outbox does (joboutbox.Outbox.Sweep), and counts
// the outboxes it woke.
func (a *App) sweepOutboxes(ctx context.Context) (int64, error) {
	return a.sumTenants(ctx, func(t db.Tenant) (int64, error) {
		var n int64
		woken, err := a.Webhooks.SweepOutbox(ctx, t)
		if woken {
			n++
		}
		if err != nil {
			return n, err
		}
		moved, err := a.Outbox.Sweep(ctx, t)
		if moved {
			n++
		}
		return n, err
	})
}

// sweepAtStart sweeps every tenant's outboxes once as the workers start
// (sweepOutboxes): the rows a process left unmoved when it ended go at
// once, not at the periodic sweep, which waits for River's leader.
func (a *App) sweepAtStart(ctx context.Context) {
	if n, err := a.sweepOutboxes(ctx); err != nil && ctx.Err() == nil {
		a.log.WarnContext(ctx, "outbox sweep at start", "woken", n, "error", err)
	}
}

// purgeWebhookDeliveries deletes every tenant's finished webhook deliveries
// (with their events) past their retention (webhooks.Service.Purge). A failing
// tenant does not stop the others.
func (a *App) purgeWebhookDeliveries(ctx context.Context, now time.Time) (int64, error) {
	return a.sumTenants(ctx, func(t db.Tenant) (int64, error) {
		return a.Webhooks.Purge(ctx, t, now)
	})
}
