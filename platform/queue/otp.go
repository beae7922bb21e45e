package queue

import (
	"fmt"

	"github.com/riverqueue/river"
)

// OTPArgs is the job that delivers a sender number's one-time password as a
// network message to the account that owns the phone. It is inserted in the
// same transaction that issues the code (registration or resend).
//
// The code travels sealed (AES-256-GCM under a key derived from a server
// secret and bound to the sender and generation): River keeps job rows in
// plain JSON, and the database must never hold a usable code.
type OTPArgs struct {
	TenantRef
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

// Subject names what the job works on, in its errors.
func (a OTPArgs) Subject() string {
	return fmt.Sprintf("otp for sender %d in %s", a.SenderID, a.Schema)
}

// InsertOpts bounds retries: River's backoff grows as attempt⁴ seconds, so
// after about eight attempts the 10-minute code has expired anyway and later
// attempts would only find it stale.
func (OTPArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 8} }
