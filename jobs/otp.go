package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/network"
)

// OTPArgs is the job that delivers a sender number's one-time password as a
// network message to the account that owns the phone. It is inserted in the
// same transaction that issues the code (registration or resend).
//
// The code travels sealed (AES-256-GCM under a key derived from a server
// secret and bound to the sender and generation): River keeps job rows in
// plain JSON, and the database must never hold a usable code.
type OTPArgs struct {
	// OrgID and Schema name the tenant.
	OrgID  int64  `json:"org_id"`
	Schema string `json:"schema"`
	// SenderID is the sender number's id in the tenant schema.
	SenderID int64 `json:"sender_id"`
	// Generation is the sender's OTP generation this code belongs to. A job
	// whose generation is no longer current sends nothing.
	Generation int `json:"generation"`
	// SealedOTP is the sealed code.
	SealedOTP []byte `json:"sealed_otp"`
}

// Kind names the job in River.
func (OTPArgs) Kind() string { return "sender_otp" }

// InsertOpts bounds retries: River's backoff grows as attempt⁴ seconds, so
// after about eight attempts the 10-minute code has expired anyway and later
// attempts would only find it stale.
func (OTPArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 8} }

// OTPDeliverer delivers the code of an OTPArgs job. It returns nil when the
// job is done (delivered, or nothing to send), a *network.PermanentError (or an
// error wrapping one) when the network refused the message for good, and any
// other error for a failure worth retrying.
type OTPDeliverer interface {
	DeliverOTP(ctx context.Context, args OTPArgs) error
}

// OTPWorker works OTPArgs jobs. Transient errors are returned to River, which
// retries with its backoff; permanent network refusals cancel the job (kept in
// River's table with the reason).
type OTPWorker struct {
	river.WorkerDefaults[OTPArgs]
	Deliverer OTPDeliverer
}

// Timeout bounds one delivery attempt.
func (w *OTPWorker) Timeout(*river.Job[OTPArgs]) time.Duration { return 30 * time.Second }

// Work delivers the code.
func (w *OTPWorker) Work(ctx context.Context, job *river.Job[OTPArgs]) error {
	err := w.Deliverer.DeliverOTP(ctx, job.Args)
	switch {
	case err == nil:
		return nil
	case network.IsPermanent(err):
		return river.JobCancel(fmt.Errorf("otp for sender %d in %s: %w", job.Args.SenderID, job.Args.Schema, err))
	default:
		return fmt.Errorf("otp for sender %d in %s: %w", job.Args.SenderID, job.Args.Schema, err)
	}
}
