package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/webhooks"
)

// WebhookAttempter makes the attempts of queue.WebhookDeliveryArgs jobs
// (the webhook service). Attempt returns what the job does next
// (webhooks.Result: done, snooze without counting an attempt, or retry
// after a failed attempt); an error is a failure of the platform. Either
// is retried after RetryIn.
type WebhookAttempter interface {
	Attempt(ctx context.Context, t db.Tenant, endpointID, deliveryID int64, run queue.DeliveryAttempt) (webhooks.Result, error)
	// RetryIn is how long after the failed run the job's next is due, not
	// past until (the end of the delivery's retry window). Attempt records
	// the same delay as the delivery's next attempt.
	RetryIn(run queue.DeliveryAttempt, until, now time.Time) time.Duration
	// AttemptTimeout is the longest one attempt takes apart from its
	// reads and writes: its waits in the worker and its request.
	AttemptTimeout() time.Duration
}

// webhookBookkeeping is how much longer than its request a webhook job
// may run: the reads and writes around the request.
const webhookBookkeeping = 20 * time.Second

// WebhookWorker works queue.WebhookDeliveryArgs jobs. A failed attempt is
// returned to River as an error (kept in the job's errors), retried when
// the service's backoff says (NextRetry asks the service, which computes
// the time it recorded from the job alone). Waits for an earlier event of
// the same key or for a free place at the endpoint are snoozes, which
// River does not count as attempts.
type WebhookWorker struct {
	river.WorkerDefaults[queue.WebhookDeliveryArgs]
	Attempter WebhookAttempter
}

// Timeout bounds one run: the attempt's waits and request, and its
// bookkeeping.
func (w *WebhookWorker) Timeout(*river.Job[queue.WebhookDeliveryArgs]) time.Duration {
	return w.Attempter.AttemptTimeout() + webhookBookkeeping
}

// Work makes one attempt of the job's delivery.
func (w *WebhookWorker) Work(ctx context.Context, job *river.Job[queue.WebhookDeliveryArgs]) error {
	t, err := job.Args.Tenant()
	if err != nil {
		return river.JobCancel(fmt.Errorf("webhook delivery %d: %w", job.Args.DeliveryID, err))
	}
	res, err := w.Attempter.Attempt(ctx, t, job.Args.EndpointID, job.Args.DeliveryID, webhookRun(job))
	switch {
	case err != nil:
		return fmt.Errorf("webhook delivery %d in %s: %w", job.Args.DeliveryID, job.Args.Schema, err)
	case res.Snooze > 0:
		return river.JobSnooze(res.Snooze)
	case res.Failure != "":
		return &AttemptFailedError{DeliveryID: job.Args.DeliveryID, Reason: res.Failure}
	default:
		return nil
	}
}

// NextRetry is when a failed run is retried: the service's delay for the
// job's run, within the delivery's retry window. A failed attempt and a
// failure of the platform are retried alike.
func (w *WebhookWorker) NextRetry(job *river.Job[queue.WebhookDeliveryArgs]) time.Time {
	now := time.Now()
	return now.Add(w.Attempter.RetryIn(webhookRun(job), job.Args.RetryUntil, now))
}

// webhookRun describes job's run to the service.
func webhookRun(job *river.Job[queue.WebhookDeliveryArgs]) queue.DeliveryAttempt {
	return queue.DeliveryAttempt{JobID: job.ID, Attempt: job.Attempt, MaxAttempts: job.MaxAttempts}
}

// AttemptFailedError is a webhook attempt the endpoint failed (an error
// answer, no answer, a refused address): River records it in the job's
// errors and retries the job.
type AttemptFailedError struct {
	// DeliveryID is the delivery whose attempt failed.
	DeliveryID int64
	// Reason is the attempt's last_error ("the endpoint answered 500").
	Reason string
}

func (e *AttemptFailedError) Error() string {
	return fmt.Sprintf("webhook delivery %d: %s", e.DeliveryID, e.Reason)
}
