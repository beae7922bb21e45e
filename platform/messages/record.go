package messages

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/webhooks"
)

// The records of a delivery's outcome: sent (markSent) or failed (fail),
// each with its day's counters and its webhook events.

// markSent records deliveries in one statement (prepared, db.Prepared):
// status sent with the network's ids, or delivered as well when the network
// confirms it (sentMessage.delivered: sent_at and delivered_at are then the
// same time), and each sender's day's sent or delivered counter. A message
// no longer queued is left alone (a concurrent run recorded it already),
// except one a receipt (ApplyReceipt) moved on before this record
// (delivered, read or failed): it gets the network's ids and keeps the
// receipt's status (never downgraded), and its counters, which the receipt
// moved, stay. The statement locks the messages (by id) before it changes
// them, so that it knows the status each had (its first step, o), and then
// the counters in sender and day order (the CTE l, which every counter
// update goes through), the order claimMany and claimLocked follow, so that
// concurrent batches cannot deadlock.
//
// With an event recorder (Config.Events) the statement also returns the
// messages it changed, and runs in a transaction with their events
// (message.sent, and message.delivered after it); without one it runs
// alone, as it always did, and builds nothing.
func (s *Service) markSent(ctx context.Context, t db.Tenant, sent []sentMessage) error {
	if len(sent) == 0 {
		return nil
	}
	now := s.clock.Now()
	rows := s.events != nil
	var query string
	var args []any
	if len(sent) == 1 {
		m := sent[0]
		query = markOneSentSQL(t, rows)
		args = []any{m.d.MessageID, m.d.ConversationID, m.d.RecipientID, sentAt(m.d, now), m.delivered, now, m.id}
	} else {
		ids := make([]int64, len(sent))
		netIDs := make([]int64, len(sent))
		convs := make([]int64, len(sent))
		recipients := make([]int64, len(sent))
		at := make([]time.Time, len(sent))
		delivered := make([]bool, len(sent))
		for i, m := range sent {
			ids[i], netIDs[i], convs[i], recipients[i] = m.id, m.d.MessageID, m.d.ConversationID, m.d.RecipientID
			at[i], delivered[i] = sentAt(m.d, now), m.delivered
		}
		query = markSentSQL(t, rows)
		args = []any{ids, netIDs, convs, recipients, at, delivered, now}
	}
	var err error
	if !rows {
		err = s.prep.Exec(ctx, nil, query, args...)
	} else {
		err = s.prep.Tx(ctx, func(tx pgx.Tx) error {
			_, evs, err := s.changedRows(ctx, tx, query, args, 2*len(sent))
			if err != nil {
				return err
			}
			return s.emit(ctx, tx, t, evs)
		})
	}
	if err != nil {
		return fmt.Errorf("record delivery of %d messages of %s: %w", len(sent), t.Schema, err)
	}
	return nil
}

// sentAt is when the network took the message: its delivery's time, else
// now.
func sentAt(d network.Delivery, now time.Time) time.Time {
	if d.DeliveredAt.IsZero() {
		return now
	}
	return d.DeliveredAt
}

// changedRows runs query, whose rows are a status each message had before
// the statement and the message after it (changedColumns), in tx, and
// returns how many messages it changed and the events of those changes (appendEvents; none without an event
// recorder), with room for about capacity of them.
func (s *Service) changedRows(ctx context.Context, tx pgx.Tx, query string, args []any, capacity int) (int, []webhooks.Event, error) {
	n := 0
	var evs []webhooks.Event
	if s.events != nil {
		evs = make([]webhooks.Event, 0, capacity)
	}
	err := s.prep.Query(ctx, tx, query, args, func(r db.Rows) error {
		for r.Next() {
			var old string
			var m row
			if err := r.Scan(append([]any{&old}, m.scanDest()...)...); err != nil {
				return err
			}
			n++
			if s.events != nil {
				evs = appendEvents(evs, old, &m)
			}
		}
		return nil
	})
	return n, evs, err
}

// changedColumns is the result of a statement whose CTE m changed messages
// and returned, as old_status, the status each had before: the rows
// changedRows reads.
var changedColumns = "m.old_status, " + messageColumns

// recordableSQL is whether message x may take a sent record (markSent): it
// is queued, or a receipt moved it on (delivered, read or failed) before
// the record (it gets the network's ids). It is a CASE, not the equivalent
// OR of status comparisons, so that it can only filter the rows the ids
// find and never be the index condition the plan starts from. With the OR,
// a plan made after an ANALYZE that saw almost nothing queued (the usual
// state of a tenant whose messages are delivered as they come) scans every
// queued message through messages_status_idx and joins the batch's ids to
// them: 80 ms and more per batch under a backlog of 10,000, which took the
// delivery drain from 3,300 to 1,000-1,300 messages/s once autovacuum ran
// (docs/performance.md, §Delivery plans start from the ids).
// TestDeliveryPlansStartFromIDs holds it.
const recordableSQL = `CASE WHEN x.status = 'queued' THEN true
	              WHEN x.status IN ('delivered', 'read', 'failed') THEN x.message_id IS NULL
	              ELSE false END`

// markedColumns is what a sent record's CTE m returns: the old status, and
// the whole message when the statement returns rows, else what the
// counters need.
func markedColumns(rows bool) string {
	if rows {
		return `o.status AS old_status, x.*`
	}
	return `o.status AS old_status, x.sender_number_id, x.created_at, x.status`
}

// fail marks a queued message failed with code and text, and counts it in
// its day's failed counter, in one statement, with its message.failed
// event: in tx (claimLocked's), or, when tx is nil, in a transaction of its
// own with an event recorder and alone without one.
func (s *Service) fail(ctx context.Context, tx pgx.Tx, t db.Tenant, id int64, code, text string) error {
	if tx == nil && s.events != nil {
		return s.prep.Tx(ctx, func(tx pgx.Tx) error { return s.fail(ctx, tx, t, id, code, text) })
	}
	sc := t.Quoted()
	_, evs, err := s.changedRows(ctx, tx, `WITH m AS (
		  UPDATE `+sc+`.messages
		     SET status = 'failed', error_code = $1::text, error_message = $2::text,
		         failed_at = $3::timestamptz, updated_at = $3::timestamptz
		   WHERE id = $4::bigint AND status = 'queued'
		  RETURNING 'queued'::text AS old_status, *),
		u AS (
		  INSERT INTO `+sc+`.daily_usage AS u (sender_number_id, day, side, failed)
		  SELECT sender_number_id, (created_at AT TIME ZONE 'UTC')::date, 'deliver', 1 FROM m
		  ON CONFLICT (sender_number_id, day, side) DO UPDATE SET failed = u.failed + 1)
		SELECT `+changedColumns+` FROM m`, []any{code, text, s.clock.Now(), id}, 1)
	if err != nil {
		return fmt.Errorf("record failure of message %d: %w", id, err)
	}
	if err := s.emit(ctx, tx, t, evs); err != nil {
		return err
	}
	s.log.InfoContext(ctx, "message failed", "schema", t.Schema, "message_id", id, "error_code", code)
	return nil
}
