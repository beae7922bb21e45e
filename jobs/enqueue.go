package jobs

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/bizmsg/platform/platform/migrate"
)

// DeliveryEnqueuer writes message delivery jobs (DeliverArgs) from inside
// another SQL statement, so that a message and its job are inserted by one
// statement: the send path's whole acceptance is one round trip and one
// commit instead of BEGIN, message, River insert, COMMIT
// (docs/performance.md, §Acceptance in one statement).
//
// The row it writes is the one River's InsertTx writes for DeliverArgs
// (kind, queue, priority, max_attempts, args, state available, scheduled and
// created now, no tags, empty metadata, no unique key); TestDeliveryEnqueuer
// holds it to that, column by column, against River itself, so a River
// upgrade that changes its job row fails a test instead of losing jobs.
// Every other job kind is inserted with River's InsertTx.
//
// Like River's InsertTx, it wakes idle producers with a notification on
// River's insert topic, at most once per NotifyEvery in this process (River
// rations them the same way); busy producers poll for more on their own.
// It is safe for concurrent use.
type DeliveryEnqueuer struct {
	every    time.Duration
	now      func() time.Time
	lastNote atomic.Int64 // unix nanoseconds of the last notification
}

// DefaultNotifyEvery is the default spacing of insert notifications: the
// workers' FetchCooldown, under which a producer cannot fetch any sooner.
const DefaultNotifyEvery = 25 * time.Millisecond

// NewDeliveryEnqueuer returns an enqueuer that notifies at most once per
// every (DefaultNotifyEvery when zero).
func NewDeliveryEnqueuer(every time.Duration) *DeliveryEnqueuer {
	if every <= 0 {
		every = DefaultNotifyEvery
	}
	return &DeliveryEnqueuer{every: every, now: time.Now}
}

// insertTopic is River's insert notification channel for its schema, and
// insertPayload the payload River sends for the delivery queue
// (riverpgxv5 PGNotifyMany: "<schema>.river_insert", {"queue": "..."}).
var (
	insertTopic   = migrate.RiverSchema + ".river_insert"
	insertPayload = fmt.Sprintf("{\"queue\": %q}", QueueDelivery)
)

// InsertSQL returns an INSERT of one delivery job per row of source, for use
// as a data-modifying WITH step. source names a relation (usually an earlier
// WITH step) with the columns org_id (bigint), schema (text), message_id and
// sender_id (bigint, not null), the fields of DeliverArgs. When a notification is due, the
// statement also sends it (delivered by Postgres at commit, like River's).
func (e *DeliveryEnqueuer) InsertSQL(source string) string {
	returning := "id"
	if e.notifyDue() {
		returning += ", pg_notify(" + quoteLiteral(insertTopic) + ", " + quoteLiteral(insertPayload) + ")"
	}
	return `INSERT INTO ` + migrate.RiverSchema + `.river_job
	        (args, kind, max_attempts, priority, queue, state, scheduled_at, created_at, tags, metadata)
	    SELECT jsonb_build_object('org_id', org_id, 'schema', schema, 'message_id', message_id, 'sender_id', sender_id),
	           ` + quoteLiteral(DeliverArgs{}.Kind()) + `, ` + strconv.Itoa(DefaultDeliveryMaxAttempts) + `, 1, ` +
		quoteLiteral(QueueDelivery) + `, 'available', now(), now(), '{}', '{}'
	      FROM ` + source + `
	    RETURNING ` + returning
}

// notifyDue reports whether this insert should notify, and if so records it.
func (e *DeliveryEnqueuer) notifyDue() bool {
	now := e.now().UnixNano()
	last := e.lastNote.Load()
	if now-last < int64(e.every) {
		return false
	}
	return e.lastNote.CompareAndSwap(last, now)
}

// quoteLiteral quotes a constant of this package as an SQL string literal.
func quoteLiteral(s string) string {
	out := make([]byte, 0, len(s)+2)
	out = append(out, '\'')
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, '\'')
		}
		out = append(out, s[i])
	}
	return string(append(out, '\''))
}
