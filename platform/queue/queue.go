// Package queue is the platform's contract with River, shared by the services
// that enqueue jobs and the workers (package jobs) that work them: the
// client construction, the job argument types, their queues and insert
// options, the retry backoff, and the reading of a job's state for people
// (DeliveryReport). It imports no service and no worker.
//
// A process has one River client, on the pgx pool (riverpgxv5). It inserts
// jobs through River's public API (InsertTx, InsertManyFastTx) inside the
// pgx transaction that writes the rows the job belongs to, so a row and its
// job commit or roll back together, or, for the tenant transactions of the
// send path, moves them there from the tenant's job outbox
// (platform/joboutbox, an Inserter); a process that runs workers also works
// jobs with it.
package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/migrate"
)

// Config configures the worker client.
type Config struct {
	// Pool is the database's pool, whose river schema holds the jobs.
	// Required.
	Pool *pgxpool.Pool
	// Workers, when set, lets the client work jobs (add every worker to
	// the bundle before Start) and schedule Periodic; nil: the client only
	// inserts and reads jobs.
	Workers  *river.Workers
	Periodic []*river.PeriodicJob
	// Logger receives River's logs. Default slog.Default().
	Logger *slog.Logger
	// MaxWorkers is the number of concurrent jobs in the default queue. Default 100.
	MaxWorkers int
	// DeliveryMaxWorkers is the number of concurrent jobs in the message
	// delivery queue (QueueDelivery). Default 100. A delivery waiting inline
	// for its sender's throttle (at most about a second) holds a slot but no
	// database connection.
	DeliveryMaxWorkers int
	// WebhookMaxWorkers is the number of concurrent jobs in the webhook
	// queue (QueueWebhooks). Default 100. An attempt holds its slot while
	// it waits for the organization's server (at most the webhook timeout)
	// but no database connection; the webhook service lets at most a few
	// attempts per endpoint run at once, so one slow endpoint holds only
	// that many slots.
	WebhookMaxWorkers int
	// ReleaseMaxWorkers is the number of concurrent jobs in the release
	// queue (QueueRelease) of scheduled sends. Default 200: the releases
	// of a tenant running at once share one transaction (acceptance's
	// release batches), and a release waiting for its tenant's batch
	// holds a slot but no database connection; with 50, ten tenants'
	// releases ran mostly alone (docs/design.md, §Scheduled sends).
	ReleaseMaxWorkers int
	// DeliveryRetryBase and DeliveryRetryMax bound the backoff of failed
	// deliveries (DeliverWorker.RetryBase/RetryMax). Defaults 1 s and 10 min.
	DeliveryRetryBase time.Duration
	DeliveryRetryMax  time.Duration
	// FetchCooldown is the minimum pause between fetches. Default 25ms: River's
	// 100ms default caps a process near 1,000 jobs/s.
	FetchCooldown time.Duration
	// FetchPollInterval is the fallback poll when no notification arrives.
	// Default 250ms.
	FetchPollInterval time.Duration
	// JobTimeout bounds one job's run, for the kinds without a timeout of
	// their own (housekeeping, the account sweep; OTPs have 30 s,
	// deliveries DeliveryTimeout). Default 1 minute.
	JobTimeout time.Duration
	// RescueStuckJobsAfter is how long a running job may go without finishing
	// before River's rescuer (on the elected leader, every 30 s) considers
	// its worker dead and makes it available again. Default JobTimeout +
	// 15 s: past the longest timeout, when a live worker has always ended
	// the job. Deliveries are rescued sooner, by the Rescuer.
	RescueStuckJobsAfter time.Duration
	// DeliveryTimeout bounds one run of a delivery job
	// (jobs.DeliverWorker.RunTimeout): one network call, the inline wait
	// (DeliveryThrottleWait) and a margin for the batch's statements. Default 8 s, the
	// figure for a 5 s network call (the platform passes NETWORK_TIMEOUT +
	// DeliveryTimeoutMargin). A slower run is cancelled and retried with
	// backoff; its delivery is never made twice (docs/design.md,
	// §Orphaned deliveries).
	DeliveryTimeout time.Duration
	// DeliveryRescueAfter is how long a delivery job may run before the
	// Rescuer takes it for orphaned (its worker process died) and makes it
	// available again. Default DeliveryTimeout + DeliveryRescueMargin.
	DeliveryRescueAfter time.Duration
	// ReleaseTimeout bounds one run of a scheduled send's release
	// (jobs.ReleaseWorker.RunTimeout): a network lookup and one
	// transaction. Default DeliveryTimeout.
	ReleaseTimeout time.Duration
	// ReleaseRescueAfter is how long a release job may run before the
	// Rescuer takes it for orphaned and makes it available again. Default
	// ReleaseTimeout + DeliveryRescueMargin.
	ReleaseRescueAfter time.Duration
	// RescueInterval is how often each worker process's Rescuer looks for
	// orphaned deliveries and releases. Default 1 s.
	RescueInterval time.Duration
}

// Figures of a delivery's real duration (docs/design.md, §Orphaned
// deliveries).
const (
	// DeliveryThrottleWait is the longest a delivery waits in its run
	// (delivery.Config.MaxInlineWait), for its throttle token and then for
	// an earlier message of its conversation; a longer wait snoozes the
	// job, which then does not run.
	DeliveryThrottleWait = time.Second
	// DeliveryTimeoutMargin is what a delivery's run needs besides its
	// network call: the inline wait and 2 s for the batch's statements and
	// for waiting behind the tenant's batch in flight.
	DeliveryTimeoutMargin = DeliveryThrottleWait + 2*time.Second
	// DeliveryRescueMargin is how long past DeliveryTimeout a delivery job
	// of a live worker may still read as running: River cancels the run at
	// the timeout and records its end within milliseconds; 2 s leave room
	// for a busy process.
	DeliveryRescueMargin = 2 * time.Second
)

// WithDefaults returns c with every unset field at its default.
func (c Config) WithDefaults() Config {
	c.setDefaults()
	return c
}

func (c *Config) setDefaults() {
	defaults.Logger(&c.Logger)
	defaults.Positive(&c.MaxWorkers, 100)
	defaults.Positive(&c.DeliveryMaxWorkers, 100)
	defaults.Positive(&c.WebhookMaxWorkers, 100)
	defaults.Positive(&c.ReleaseMaxWorkers, 200)
	defaults.Positive(&c.FetchCooldown, 25*time.Millisecond)
	defaults.Positive(&c.FetchPollInterval, 250*time.Millisecond)
	defaults.Positive(&c.JobTimeout, time.Minute)
	defaults.Positive(&c.RescueStuckJobsAfter, c.JobTimeout+15*time.Second)
	defaults.Positive(&c.DeliveryTimeout, 5*time.Second+DeliveryTimeoutMargin)
	defaults.Positive(&c.DeliveryRescueAfter, c.DeliveryTimeout+DeliveryRescueMargin)
	defaults.Positive(&c.ReleaseTimeout, c.DeliveryTimeout)
	defaults.Positive(&c.ReleaseRescueAfter, c.ReleaseTimeout+DeliveryRescueMargin)
	defaults.Positive(&c.RescueInterval, time.Second)
}

// Rescuer returns the Rescuer of the kinds whose timeouts c sets: the
// deliveries, orphaned after DeliveryRescueAfter, and the scheduled sends'
// releases and campaigns' ticks (both on ReleaseTimeout), orphaned after
// ReleaseRescueAfter. The Rescuer also makes their due scheduled jobs
// available every RescueInterval on every worker process, so a release is
// due within seconds even while River has no leader (its scheduler runs
// on the leader only); a campaign's job is unique, so River's scheduler
// moves it when it waits longer than 5 s (until send_at or midnight).
func (c Config) Rescuer(d *db.DB) (*Rescuer, error) {
	c.setDefaults()
	return NewRescuer(RescuerConfig{
		DB: d,
		Kinds: map[string]time.Duration{
			DeliverArgs{}.Kind():  c.DeliveryRescueAfter,
			ReleaseArgs{}.Kind():  c.ReleaseRescueAfter,
			CampaignArgs{}.Kind(): c.ReleaseRescueAfter,
		},
		Interval: c.RescueInterval,
		Logger:   c.Logger,
	})
}

// NewClient checks cfg and returns the process's River client: one that
// works jobs when cfg.Workers is set, else one that only inserts and reads
// them.
func NewClient(cfg Config) (*river.Client[pgx.Tx], error) {
	if cfg.Pool == nil {
		return nil, errors.New("queue: Config.Pool is required")
	}
	cfg.setDefaults()
	rc := &river.Config{
		Schema: migrate.RiverSchema,
		Logger: cfg.Logger.With("component", "river"),
	}
	if cfg.Workers != nil {
		rc.Queues = map[string]river.QueueConfig{
			river.QueueDefault: {MaxWorkers: cfg.MaxWorkers},
			QueueDelivery:      {MaxWorkers: cfg.DeliveryMaxWorkers},
			QueueWebhooks:      {MaxWorkers: cfg.WebhookMaxWorkers},
			QueueRelease:       {MaxWorkers: cfg.ReleaseMaxWorkers},
		}
		rc.Workers = cfg.Workers
		rc.PeriodicJobs = cfg.Periodic
		rc.FetchCooldown = cfg.FetchCooldown
		rc.FetchPollInterval = cfg.FetchPollInterval
		rc.JobTimeout = cfg.JobTimeout
		rc.RescueStuckJobsAfter = cfg.RescueStuckJobsAfter
	}
	c, err := river.NewClient(riverpgxv5.New(cfg.Pool), rc)
	if err != nil {
		return nil, fmt.Errorf("river client: %w", err)
	}
	return c, nil
}

// Inserter inserts jobs inside a pgx transaction: the process's River
// client is one.
type Inserter interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	InsertManyFastTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) (int, error)
}

// Stop stops c within ctx's deadline: no new jobs are fetched, and running
// jobs may finish for the first half of the time left; then they are
// cancelled (River retries them later: every job of the platform may be
// cancelled, a delivery is never made twice) and have the second half to
// return. A job that runs long on purpose (housekeeping over thousands of
// tenants) so no longer holds a shutdown past its bound. Without a deadline
// Stop waits for the jobs until ctx ends, then cancels them and returns.
//
// cancelled reports that running jobs had to be cancelled: a normal end of
// a shutdown, not an error. err is set when the stop failed, cancelled
// jobs included that did not return in time.
func Stop(ctx context.Context, c *river.Client[pgx.Tx]) (cancelled bool, err error) {
	soft := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		soft, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(dl)/2))
		defer cancel()
	}
	if err := c.Stop(soft); err != nil {
		if err2 := c.StopAndCancel(ctx); err2 != nil {
			return true, fmt.Errorf("stop river: %w (then: %w)", err, err2)
		}
		return true, nil
	}
	return false, nil
}
