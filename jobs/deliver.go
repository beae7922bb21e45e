package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/queue"
)

// MessageDeliverer delivers the message of a queue.DeliverArgs job (the delivery
// service). It returns:
//   - 0, nil when the job is done: delivered, refused for good (the message is
//     marked failed), or nothing left to do (already sent or failed);
//   - d > 0, nil when the sender's throttle asks the job to come back after d;
//   - an error for a failure worth retrying (a transient network or database
//     error); a *network.PermanentError means the job itself is unusable.
type MessageDeliverer interface {
	DeliverMessage(ctx context.Context, args queue.DeliverArgs, at queue.DeliveryAttempt) (snooze time.Duration, err error)
}

// DeliverWorker works queue.DeliverArgs jobs. Execution is at least once (a crashed
// worker's job is rescued and run again); the deliverer makes the effect
// exactly once by delivering with the message's own network reference.
type DeliverWorker struct {
	river.WorkerDefaults[queue.DeliverArgs]
	Deliverer MessageDeliverer
	// RetryBase is the first retry's backoff, doubled per attempt up to
	// RetryMax, with ±10% jitter. Defaults 1 s and 10 min. River's own policy
	// (attempt⁴ seconds) would leave a message queued for minutes after a
	// short network blip.
	RetryBase time.Duration
	RetryMax  time.Duration
	// RunTimeout bounds one run (queue.Config.DeliveryTimeout); River
	// cancels the run's context at it. Zero: the client's JobTimeout.
	RunTimeout time.Duration
}

// Timeout is the job's run bound, RunTimeout: a delivery's real duration,
// far below the client's JobTimeout, so that a run is never cut short
// while it is working, and a dead worker's job is known orphaned soon
// after (queue.Rescuer).
func (w *DeliverWorker) Timeout(*river.Job[queue.DeliverArgs]) time.Duration { return w.RunTimeout }

// Work delivers the message, or snoozes for exactly the throttle's delay.
func (w *DeliverWorker) Work(ctx context.Context, job *river.Job[queue.DeliverArgs]) error {
	d, err := w.Deliverer.DeliverMessage(ctx, job.Args, queue.DeliveryAttempt{
		JobID: job.ID, Attempt: job.Attempt, MaxAttempts: job.MaxAttempts,
	})
	switch {
	case err != nil && network.IsPermanent(err):
		return river.JobCancel(queue.Explain(fmt.Errorf("message %d in %s: %w", job.Args.MessageID, job.Args.Schema, err)))
	case err != nil:
		return queue.Explain(fmt.Errorf("message %d in %s: %w", job.Args.MessageID, job.Args.Schema, err))
	case d > 0:
		return river.JobSnooze(d)
	default:
		return nil
	}
}

// NextRetry is the backoff after a failed attempt: RetryBase·2^(attempt-1),
// at most RetryMax, ±10%.
func (w *DeliverWorker) NextRetry(job *river.Job[queue.DeliverArgs]) time.Time {
	return time.Now().Add(queue.Backoff(job.Attempt, w.RetryBase, w.RetryMax))
}
