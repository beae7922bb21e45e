// Package queue is the platform's contract with River, shared by the services
// that enqueue jobs and the workers (package jobs) that work them: the
// client construction, the job argument types, their queues and insert
// options, the retry backoff, and the reading of a job's state for people
// (DeliveryReport). It imports no service and no worker.
//
// A process has one River client, on the pgx pool (riverpgxv5). It inserts
// jobs through River's public API (InsertTx, InsertManyFastTx) inside the
// pgx transaction that writes the rows the job belongs to, so a row and its
// job commit or roll back together; a process that runs workers also works
// jobs with it.
package queue

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/bizmsg/platform/platform/migrate"
)

// Config configures the worker client.
type Config struct {
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
	// JobTimeout bounds one job's run. Default 1 minute.
	JobTimeout time.Duration
	// RescueStuckJobsAfter is how long a running job may go without finishing
	// before River considers its worker dead and makes it available again.
	// Default 2 minutes (must exceed JobTimeout).
	RescueStuckJobsAfter time.Duration
}

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxWorkers <= 0 {
		c.MaxWorkers = 100
	}
	if c.DeliveryMaxWorkers <= 0 {
		c.DeliveryMaxWorkers = 100
	}
	if c.WebhookMaxWorkers <= 0 {
		c.WebhookMaxWorkers = 100
	}
	if c.FetchCooldown <= 0 {
		c.FetchCooldown = 25 * time.Millisecond
	}
	if c.FetchPollInterval <= 0 {
		c.FetchPollInterval = 250 * time.Millisecond
	}
	if c.JobTimeout <= 0 {
		c.JobTimeout = time.Minute
	}
	if c.RescueStuckJobsAfter <= 0 {
		c.RescueStuckJobsAfter = 2 * time.Minute
	}
}

// NewClient returns the process's River client. With workers it can also
// work jobs (add every worker to the bundle before Start) and schedules
// periodic; with workers nil it only inserts and reads jobs.
func NewClient(pool *pgxpool.Pool, workers *river.Workers, periodic []*river.PeriodicJob, cfg Config) (*river.Client[pgx.Tx], error) {
	cfg.setDefaults()
	rc := &river.Config{
		Schema: migrate.RiverSchema,
		Logger: cfg.Logger.With("component", "river"),
	}
	if workers != nil {
		rc.Queues = map[string]river.QueueConfig{
			river.QueueDefault: {MaxWorkers: cfg.MaxWorkers},
			QueueDelivery:      {MaxWorkers: cfg.DeliveryMaxWorkers},
			QueueWebhooks:      {MaxWorkers: cfg.WebhookMaxWorkers},
		}
		rc.Workers = workers
		rc.PeriodicJobs = periodic
		rc.FetchCooldown = cfg.FetchCooldown
		rc.FetchPollInterval = cfg.FetchPollInterval
		rc.JobTimeout = cfg.JobTimeout
		rc.RescueStuckJobsAfter = cfg.RescueStuckJobsAfter
	}
	c, err := river.NewClient(riverpgxv5.New(pool), rc)
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

// Stop stops c gracefully: no new jobs are fetched and running jobs finish,
// until ctx is done; then running jobs are cancelled (River retries them later).
func Stop(ctx context.Context, c *river.Client[pgx.Tx]) error {
	if err := c.Stop(ctx); err != nil {
		if err2 := c.StopAndCancel(context.WithoutCancel(ctx)); err2 != nil {
			return fmt.Errorf("stop river: %w (then: %w)", err, err2)
		}
		return fmt.Errorf("stop river: %w", err)
	}
	return nil
}
