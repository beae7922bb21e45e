package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/network"
)

// NetworkJob is the arguments of a job whose work is one call to the
// messaging network: queue.OTPArgs (senders.Service.DeliverOTP),
// queue.ConsentReplyArgs (consent.Service.SendReply) and
// queue.TemplateReviewArgs (templates.Service.Submit).
type NetworkJob interface {
	river.JobArgs
	// Subject names what the job works on, in its errors.
	Subject() string
}

// NetworkWorker works the jobs of args T by their call to the network. A
// transient failure is returned to River, which retries with its backoff;
// a permanent refusal by the network cancels the job, kept in River's
// table with the reason (a refused template stays pending; the network's
// operator may decide it).
type NetworkWorker[T NetworkJob] struct {
	river.WorkerDefaults[T]
	// Call does the job's work. It returns nil when the job is done (or
	// there is nothing to do), a *network.PermanentError (or an error
	// wrapping one) when the network refused for good, and any other error
	// for a failure worth retrying.
	Call func(ctx context.Context, args T) error
}

// Timeout bounds one attempt.
func (w *NetworkWorker[T]) Timeout(*river.Job[T]) time.Duration { return 30 * time.Second }

// Work makes the call and answers River with its outcome.
func (w *NetworkWorker[T]) Work(ctx context.Context, job *river.Job[T]) error {
	return networkOutcome(w.Call(ctx, job.Args), job.Args.Subject())
}

// networkOutcome is a network job's answer to River for err, the outcome of
// its work on what: nil when done, the job cancelled when the network
// refused for good (a *network.PermanentError), else err to retry with
// River's backoff.
func networkOutcome(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case network.IsPermanent(err):
		return river.JobCancel(fmt.Errorf("%s: %w", what, err))
	default:
		return fmt.Errorf("%s: %w", what, err)
	}
}
