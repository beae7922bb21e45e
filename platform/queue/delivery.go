package queue

import (
	"math/rand/v2"
	"time"

	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/defaults"
)

// QueueDelivery is the River queue of message deliveries. It has its own
// worker pool (Config.DeliveryMaxWorkers) so a burst of sends never starves
// OTPs and housekeeping in the default queue, and vice versa.
const QueueDelivery = "delivery"

// DefaultDeliveryMaxAttempts bounds a message's delivery attempts. With the
// worker's backoff (1 s doubling to at most 10 min) 25 attempts span about
// three hours of network outage; the last failure marks the message failed.
const DefaultDeliveryMaxAttempts = 25

// DeliverArgs is the job that delivers one accepted message. It is inserted
// in the message's acceptance transaction (DeliveryJob), into the tenant's
// job outbox, which moves it into River after the commit, so a message is
// never stored without its job nor a job enqueued without its message. A
// move may insert it twice (docs/scaling.md, §Jobs): the delivery's claim
// makes the second find its message claimed or sent.
type DeliverArgs struct {
	TenantRef
	// MessageID is the message's id in the tenant schema.
	MessageID int64 `json:"message_id"`
	// SenderID is the message's sender number, for operators reading the
	// job. Jobs enqueued before it existed have none (zero); delivery reads
	// the sender from the message.
	SenderID int64 `json:"sender_id,omitempty"`
}

// Kind names the job in River.
func (DeliverArgs) Kind() string { return "message_delivery" }

// InsertOpts puts deliveries on their own queue.
func (DeliverArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueDelivery, MaxAttempts: DefaultDeliveryMaxAttempts}
}

// DeliveryJob returns the insert parameters of args's job: the queue and
// attempts of DeliverArgs. Its arguments name the message, by which
// DeliveryJobOf finds it; it carries no metadata, which River would index a
// second time for every message (docs/performance.md, §River's insert).
func DeliveryJob(args DeliverArgs) river.InsertManyParams {
	opts := args.InsertOpts()
	return river.InsertManyParams{Args: args, InsertOpts: &opts}
}

// DeliveryAttempt describes the run of a delivery job.
type DeliveryAttempt struct {
	// JobID is the River job id: stable across attempts, snoozes and
	// rescues, it names the job's claims of messages.
	JobID int64
	// Attempt counts runs that ended in an error, plus this one (snoozes do
	// not count).
	Attempt     int
	MaxAttempts int
}

// Last reports whether River will not retry this attempt if it fails.
func (a DeliveryAttempt) Last() bool { return a.Attempt >= a.MaxAttempts }

// Backoff returns the delay before retrying after the attempt-th failure:
// base·2^(attempt-1) capped at maxDelay, with ±10% jitter. Zero base and
// maxDelay mean 1 s and 10 min.
func Backoff(attempt int, base, maxDelay time.Duration) time.Duration {
	return backoff(attempt, base, maxDelay, rand.Float64()) //nolint:gosec // G404: retry jitter, not a secret
}

// backoff is Backoff with its jitter drawn from u, in [0, 1).
func backoff(attempt int, base, maxDelay time.Duration, u float64) time.Duration {
	defaults.Positive(&base, time.Second)
	defaults.Positive(&maxDelay, 10*time.Minute)
	d := maxDelay
	if attempt < 1 {
		attempt = 1
	}
	if shift := attempt - 1; shift < 32 && base<<shift > 0 && base<<shift < maxDelay {
		d = base << shift
	}
	return d + time.Duration((u*0.2-0.1)*float64(d))
}
