package queue

import (
	"time"

	"github.com/riverqueue/river"
)

// QueueRelease is the River queue of scheduled sends' releases. It has its
// own worker pool (Config.ReleaseMaxWorkers), so that many messages due at
// one instant neither starve OTPs and housekeeping in the default queue nor
// take the slots of the deliveries they release.
const QueueRelease = "release"

// DefaultReleaseMaxAttempts bounds a release's attempts. A release fails
// only on a database or network error (a refused check is a result, not an
// error); with River's backoff 10 attempts span about three hours.
const DefaultReleaseMaxAttempts = 10

// ReleaseArgs is the job that releases one scheduled message at its send_at
// (docs/design.md, §Scheduled sends). It is inserted, scheduled at send_at,
// in the transaction that stores the scheduled message, so a scheduled
// message is never stored without its release. Its run is idempotent: only
// a message still scheduled is released, under its row lock, so a job run
// twice (a worker killed after the release committed) releases once.
type ReleaseArgs struct {
	TenantRef
	// MessageID is the scheduled message's id in the tenant schema.
	MessageID int64 `json:"message_id"`
}

// Kind names the job in River.
func (ReleaseArgs) Kind() string { return "message_release" }

// InsertOpts puts releases on their own queue.
func (ReleaseArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueRelease, MaxAttempts: DefaultReleaseMaxAttempts}
}

// ReleaseJob returns the insert parameters of args's job, scheduled at at:
// River makes it available once at is due (its scheduler looks 5 s ahead
// and producers fetch at least every FetchPollInterval).
func ReleaseJob(args ReleaseArgs, at time.Time) river.InsertManyParams {
	opts := args.InsertOpts()
	opts.ScheduledAt = at
	return river.InsertManyParams{Args: args, InsertOpts: &opts}
}
