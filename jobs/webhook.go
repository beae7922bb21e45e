package jobs

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/webhooks"
)

// WebhookAttempter makes the attempts of queue.WebhookDeliveryArgs jobs
// (the webhook service). Attempt returns what the job does next
// (webhooks.Result: done, snooze without counting an attempt, or retry
// after a failed attempt); an error is a failure of the platform, retried
// with the default backoff.
type WebhookAttempter interface {
	Attempt(ctx context.Context, t db.Tenant, endpointID, deliveryID int64, final bool) (webhooks.Result, error)
	// AttemptTimeout is the longest one attempt takes apart from its
	// reads and writes: its waits in the worker and its request.
	AttemptTimeout() time.Duration
}

// webhookBookkeeping is how much longer than its request a webhook job
// may run: the reads and writes around the request.
const webhookBookkeeping = 20 * time.Second

// WebhookWorker works queue.WebhookDeliveryArgs jobs. A failed attempt is
// returned to River as an error (kept in the job's errors), retried when
// the service's backoff says: the delay Attempt returned, handed to
// NextRetry through the worker. Waits for an earlier event of the same
// key or for a free place at the endpoint are snoozes, which River does
// not count as attempts.
type WebhookWorker struct {
	river.WorkerDefaults[queue.WebhookDeliveryArgs]
	Attempter WebhookAttempter

	// retryIn holds, by job id, the delay of the next attempt of a job
	// whose attempt just failed, from Work to NextRetry (River calls both
	// for one run, in turn).
	retryIn sync.Map
}

// Timeout bounds one run: the attempt's waits and request, and its
// bookkeeping.
func (w *WebhookWorker) Timeout(*river.Job[queue.WebhookDeliveryArgs]) time.Duration {
	return w.Attempter.AttemptTimeout() + webhookBookkeeping
}

// Work makes one attempt of the job's delivery.
func (w *WebhookWorker) Work(ctx context.Context, job *river.Job[queue.WebhookDeliveryArgs]) error {
	w.retryIn.Delete(job.ID)
	t, err := db.NewTenant(job.Args.OrgID, job.Args.Schema)
	if err != nil {
		return river.JobCancel(fmt.Errorf("webhook delivery %d: %w", job.Args.DeliveryID, err))
	}
	res, err := w.Attempter.Attempt(ctx, t, job.Args.EndpointID, job.Args.DeliveryID, job.Attempt >= job.MaxAttempts)
	switch {
	case err != nil:
		return fmt.Errorf("webhook delivery %d in %s: %w", job.Args.DeliveryID, job.Args.Schema, err)
	case res.Snooze > 0:
		return river.JobSnooze(res.Snooze)
	case res.Failure != "":
		w.retryIn.Store(job.ID, res.RetryIn)
		return &AttemptFailedError{DeliveryID: job.Args.DeliveryID, Reason: res.Failure}
	default:
		return nil
	}
}

// NextRetry is when a failed attempt is retried: the delay the service
// gave for a failed attempt, else (a failure of the platform) the
// service's backoff on River's attempt count.
func (w *WebhookWorker) NextRetry(job *river.Job[queue.WebhookDeliveryArgs]) time.Time {
	if d, ok := w.retryIn.LoadAndDelete(job.ID); ok {
		if delay, ok := d.(time.Duration); ok {
			return time.Now().Add(delay)
		}
	}
	return time.Now().Add(queue.Backoff(job.Attempt, queue.WebhookRetryBase, queue.WebhookRetryMax))
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
