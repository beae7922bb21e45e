package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/queue"
)

// ConsentReplier sends the confirmation of a queue.ConsentReplyArgs job
// (consent.Service).
type ConsentReplier interface {
	SendReply(ctx context.Context, args queue.ConsentReplyArgs) error
}

// ConsentReplyWorker works queue.ConsentReplyArgs jobs: transient failures
// are retried with River's backoff, a permanent refusal by the network
// cancels the job.
type ConsentReplyWorker struct {
	river.WorkerDefaults[queue.ConsentReplyArgs]
	Replier ConsentReplier
}

// Timeout bounds one attempt.
func (w *ConsentReplyWorker) Timeout(*river.Job[queue.ConsentReplyArgs]) time.Duration {
	return 30 * time.Second
}

// Work sends the confirmation.
func (w *ConsentReplyWorker) Work(ctx context.Context, job *river.Job[queue.ConsentReplyArgs]) error {
	return networkOutcome(w.Replier.SendReply(ctx, job.Args), "confirmation in "+job.Args.Schema)
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
