package messages

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/webhooks"
)

// eventKey is the ordering key of message id's events.
func eventKey(id int64) string { return "message:" + itoa(id) }

// AppendEvents appends to evs the events of message r's move from status
// old to its status now, in the order of the lifecycle: a queued message
// recorded delivered at once (a network that confirms delivery) is sent,
// then delivered; a message that reached read or failed reports that. A
// move that is not a status change appends nothing.
func AppendEvents(evs []webhooks.Event, old string, r *Row) []webhooks.Event {
	if old == r.Status {
		return evs
	}
	m := r.message()
	key := eventKey(r.ID)
	switch r.Status {
	case StatusSent:
		evs = append(evs, webhooks.Event{Type: webhooks.EventMessageSent, Key: key, Data: m, At: orTime(m.SentAt, r.UpdatedAt)})
	case StatusDelivered:
		if old == StatusQueued && m.SentAt != nil {
			// Sent and delivered in one record: the sent event shows the
			// message as it was between the two.
			sent := m
			sent.Status, sent.DeliveredAt = StatusSent, nil
			evs = append(evs, webhooks.Event{Type: webhooks.EventMessageSent, Key: key, Data: sent, At: *m.SentAt})
		}
		evs = append(evs, webhooks.Event{Type: webhooks.EventMessageDelivered, Key: key, Data: m, At: orTime(m.DeliveredAt, r.UpdatedAt)})
	case StatusRead:
		evs = append(evs, webhooks.Event{Type: webhooks.EventMessageRead, Key: key, Data: m, At: orTime(m.ReadAt, r.UpdatedAt)})
	case StatusFailed:
		evs = append(evs, webhooks.Event{Type: webhooks.EventMessageFailed, Key: key, Data: m, At: orTime(m.FailedAt, r.UpdatedAt)})
	case StatusReceived:
		evs = append(evs, webhooks.Event{Type: webhooks.EventMessageReceived, Key: key, Data: m, At: orTime(m.ReceivedAt, r.UpdatedAt)})
	case StatusCanceled:
		evs = append(evs, webhooks.Event{Type: webhooks.EventMessageCanceled, Key: key, Data: m, At: orTime(m.CanceledAt, r.UpdatedAt)})
	}
	return evs
}

// orTime is *p, or def when p is nil.
func orTime(p *time.Time, def time.Time) time.Time {
	if p == nil {
		return def
	}
	return *p
}

// Changes runs the statements that change messages, in every stage of a
// message (acceptance, delivery, receipts, inbound messages), and records
// the webhook events of the changes in the same transaction, so that an
// event exists if and only if its change committed.
type Changes struct {
	// Prepared runs the statements. Required.
	Prepared *db.Prepared
	// Events records the events: once per transaction with every event of
	// that transaction, in the order the changes happened; an error rolls
	// the change back. Each event's Key is "message:<id>" and its Data the
	// Message as the API shows it. Nil records none, and the paths that
	// change a message then run as they would without events: no
	// transaction of their own, no resource built.
	Events webhooks.Emitter
}

// Recording reports whether c records events.
func (c Changes) Recording() bool { return c.Events != nil }

// Run runs query, whose rows are a status each message had before the
// statement and the message after it (ChangedColumns), in tx, and returns
// how many messages it changed and the events of those changes
// (AppendEvents; none without an event recorder), with room for about
// capacity of them.
func (c Changes) Run(ctx context.Context, tx pgx.Tx, query string, args []any, capacity int) (int, []webhooks.Event, error) {
	n := 0
	var evs []webhooks.Event
	if c.Events != nil {
		evs = make([]webhooks.Event, 0, capacity)
	}
	err := c.Prepared.Query(ctx, tx, query, args, func(r db.Rows) error {
		for r.Next() {
			var old string
			var m Row
			if err := r.Scan(append([]any{&old}, m.ScanDest()...)...); err != nil {
				return err
			}
			n++
			if c.Events != nil {
				evs = AppendEvents(evs, old, &m)
			}
		}
		return nil
	})
	return n, evs, err
}

// ChangedColumns is the result of a statement whose CTE m changed messages
// and returned, as old_status, the status each had before: the rows Run
// reads.
var ChangedColumns = "m.old_status, " + Columns

// Emit hands evs to the recorder in tx; nothing without a recorder or
// events.
func (c Changes) Emit(ctx context.Context, tx pgx.Tx, t db.Tenant, evs []webhooks.Event) error {
	if c.Events == nil || len(evs) == 0 {
		return nil
	}
	if err := c.Events.Emit(ctx, tx, t, evs...); err != nil {
		return fmt.Errorf("record %d events of %s: %w", len(evs), t.Schema, err)
	}
	return nil
}
