package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/queue"
)

// OTPDeliverer delivers the code of an queue.OTPArgs job. It returns nil when the
// job is done (delivered, or nothing to send), a *network.PermanentError (or an
// error wrapping one) when the network refused the message for good, and any
// other error for a failure worth retrying.
type OTPDeliverer interface {
	DeliverOTP(ctx context.Context, args queue.OTPArgs) error
}

// OTPWorker works queue.OTPArgs jobs. Transient errors are returned to River, which
// retries with its backoff; permanent network refusals cancel the job (kept in
// River's table with the reason).
type OTPWorker struct {
	river.WorkerDefaults[queue.OTPArgs]
	Deliverer OTPDeliverer
}

// Timeout bounds one delivery attempt.
func (w *OTPWorker) Timeout(*river.Job[queue.OTPArgs]) time.Duration { return 30 * time.Second }

// Work delivers the code.
func (w *OTPWorker) Work(ctx context.Context, job *river.Job[queue.OTPArgs]) error {
	return networkOutcome(w.Deliverer.DeliverOTP(ctx, job.Args),
		fmt.Sprintf("otp for sender %d in %s", job.Args.SenderID, job.Args.Schema))
}
