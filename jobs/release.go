package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/queue"
)

// ScheduledReleaser releases a scheduled message (the acceptance service):
// it returns the message's status after the release and an error only for
// a transient failure worth retrying; a refused check fails the message
// (a result, not an error), and a message no longer scheduled is left as
// it is. last tells the job's last attempt: a transient failure then fails
// the message (network_error) rather than leave it scheduled for good.
type ScheduledReleaser interface {
	ReleaseScheduled(ctx context.Context, t db.Tenant, id int64, last bool) (string, error)
}

// ReleaseWorker works queue.ReleaseArgs jobs, each due at its message's
// send_at. Execution is at least once (a killed worker's job is rescued and
// run again); the releaser makes the effect exactly once by releasing only
// a message still scheduled, under its row lock.
type ReleaseWorker struct {
	river.WorkerDefaults[queue.ReleaseArgs]
	Releaser ScheduledReleaser
	// RunTimeout bounds one run (queue.Config.ReleaseTimeout); River
	// cancels the run's context at it. Zero: the client's JobTimeout.
	RunTimeout time.Duration
}

// Timeout is the job's run bound, RunTimeout, below the Rescuer's rescue
// time of releases, so that a live worker's run has always ended when the
// Rescuer takes a job for orphaned.
func (w *ReleaseWorker) Timeout(*river.Job[queue.ReleaseArgs]) time.Duration { return w.RunTimeout }

// Work releases the job's message.
func (w *ReleaseWorker) Work(ctx context.Context, job *river.Job[queue.ReleaseArgs]) error {
	t, err := job.Args.Tenant()
	if err != nil {
		return river.JobCancel(fmt.Errorf("release job %d: %w", job.ID, err))
	}
	last := job.Attempt >= job.MaxAttempts
	if _, err := w.Releaser.ReleaseScheduled(ctx, t, job.Args.MessageID, last); err != nil {
		return queue.Explain(fmt.Errorf("release message %d in %s: %w", job.Args.MessageID, t.Schema, err))
	}
	return nil
}
