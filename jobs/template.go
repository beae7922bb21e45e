package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/queue"
)

// TemplateSubmitter submits the template of a queue.TemplateReviewArgs job
// to the network for review. It returns nil when the job is done (submitted,
// or nothing to submit), a *network.PermanentError (or an error wrapping
// one) when the network refused the template for good, and any other error
// for a failure worth retrying.
type TemplateSubmitter interface {
	Submit(ctx context.Context, args queue.TemplateReviewArgs) error
}

// TemplateReviewWorker works queue.TemplateReviewArgs jobs. Transient errors
// are returned to River, which retries with its backoff; permanent refusals
// cancel the job (the template stays pending; the network's operator may
// decide it).
type TemplateReviewWorker struct {
	river.WorkerDefaults[queue.TemplateReviewArgs]
	Submitter TemplateSubmitter
}

// Timeout bounds one submission.
func (w *TemplateReviewWorker) Timeout(*river.Job[queue.TemplateReviewArgs]) time.Duration {
	return 30 * time.Second
}

// Work submits the template.
func (w *TemplateReviewWorker) Work(ctx context.Context, job *river.Job[queue.TemplateReviewArgs]) error {
	return networkOutcome(w.Submitter.Submit(ctx, job.Args),
		fmt.Sprintf("template %d in %s", job.Args.TemplateID, job.Args.Schema))
}
