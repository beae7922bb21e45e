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
	err := w.Replier.SendReply(ctx, job.Args)
	switch {
	case err == nil:
		return nil
	case network.IsPermanent(err):
		return river.JobCancel(fmt.Errorf("confirmation in %s: %w", job.Args.Schema, err))
	default:
		return fmt.Errorf("confirmation in %s: %w", job.Args.Schema, err)
	}
}
