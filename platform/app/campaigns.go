package app

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/jobs"
	"github.com/bizmsg/platform/platform/campaignrelease"
	"github.com/bizmsg/platform/platform/campaigns"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/tenant"
)

// wakeFunc is a campaigns.Releaser of a function: the campaign service is
// built before the release it wakes, which needs it.
type wakeFunc func(ctx context.Context, tx pgx.Tx, t db.Tenant, id int64) error

// Wake calls f.
func (f wakeFunc) Wake(ctx context.Context, tx pgx.Tx, t db.Tenant, id int64) error {
	return f(ctx, tx, t, id)
}

// campaignService builds the campaign service (docs/api.md, §Campaigns)
// and its release (docs/design.md, §Campaigns: pacing and fairness): it
// resolves templates through a.Templates, emits campaign events through
// a.Webhooks and releases recipients through a.Acceptance, so all three
// must exist. Every change of a campaign's state wakes the release in its
// transaction. On a Citus coordinator its recipients' inserts are routed
// (campaigns.Config.Routed).
func (a *App) campaignService(ctx context.Context) error {
	routed, err := a.Migrator.Citus(ctx)
	if err != nil {
		return err
	}
	svc, err := campaigns.New(campaigns.Config{
		DB:        a.DB,
		Templates: a.Templates,
		Events:    a.Webhooks,
		Clock:     a.clock,
		Releaser: wakeFunc(func(ctx context.Context, tx pgx.Tx, t db.Tenant, id int64) error {
			return a.CampaignRelease.Wake(ctx, tx, t, id)
		}),
		Routed: routed,
	})
	if err != nil {
		return err
	}
	a.Campaigns = svc
	a.CampaignRelease, err = campaignrelease.New(campaignrelease.Config{
		DB:         a.DB,
		Acceptance: a.Acceptance,
		Campaigns:  svc,
		Jobs:       a.Outbox,
		SenderRate: a.cfg.SenderRate,
		Clock:      a.clock,
		Logger:     a.log,
	})
	return err
}

// campaignWorkers registers the campaigns' release worker.
func (a *App) campaignWorkers(workers *river.Workers, cfg queue.Config) {
	river.AddWorker(workers, &jobs.CampaignWorker{Ticker: a.CampaignRelease, RunTimeout: cfg.ReleaseTimeout})
}

// campaignRoutes mounts the Tenant API's campaign endpoints.
func (a *App) campaignRoutes() {
	tenant.MountCampaigns(a.TenantRoutes, a.Campaigns)
}
