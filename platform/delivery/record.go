package delivery

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/network"

	"errors"

	"github.com/bizmsg/platform/platform/messages"
)

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
	rows := s.changes.Recording()
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
			_, evs, err := s.changes.Run(ctx, tx, query, args, 2*len(sent))
			if err != nil {
				return err
			}
			return s.changes.Emit(ctx, tx, t, evs)
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
// (docs/design.md, §Delivery plans start from the ids).
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
	if tx == nil && s.changes.Recording() {
		return s.prep.Tx(ctx, func(tx pgx.Tx) error { return s.fail(ctx, tx, t, id, code, text) })
	}
	sc := t.Quoted()
	_, evs, err := s.changes.Run(ctx, tx, `WITH m AS (
		  UPDATE `+sc+`.messages
		     SET status = 'failed', error_code = $1::text, error_message = $2::text,
		         failed_at = $3::timestamptz, updated_at = $3::timestamptz
		   WHERE id = $4::bigint AND status = 'queued'
		  RETURNING 'queued'::text AS old_status, *),
		u AS (
		  INSERT INTO `+sc+`.daily_usage AS u (sender_number_id, day, side, failed)
		  SELECT sender_number_id, (created_at AT TIME ZONE 'UTC')::date, 'deliver', 1 FROM m
		  ON CONFLICT (sender_number_id, day, side) DO UPDATE SET failed = u.failed + 1)
		SELECT `+messages.ChangedColumns+` FROM m`, []any{code, text, s.clock.Now(), id}, 1)
	if err != nil {
		return fmt.Errorf("record failure of message %d: %w", id, err)
	}
	if err := s.changes.Emit(ctx, tx, t, evs); err != nil {
		return err
	}
	s.log.InfoContext(ctx, "message failed", "schema", t.Schema, "message_id", id, "error_code", code)
	return nil
}

// outcome handles the network's result r for the message of it (the batch's
// item i): a delivery is returned, to record; a refusal fails the message; a
// transient failure is the job's error, marks the message failing (its
// failing_since, the start of the time after which it no longer holds its
// conversation back: blockerSQL), and on the job's last attempt at its own
// message fails the message with network_error as well. A transient failure
// of a message the job carried its conversation on to releases the job's
// claim of it: its retries are its own job's (DeliverMessage hands it over).
func (s *Service) outcome(ctx context.Context, t db.Tenant, it pendingDelivery, i int, r network.Result) (*sentMessage, error) {
	id, at := it.id, it.at
	var refusal *network.PermanentError
	switch {
	case errors.As(r.Err, &refusal):
		return nil, s.fail(ctx, nil, t, id, refusal.Code, refusal.Message)
	case r.Err != nil && it.own && at.Last():
		s.log.WarnContext(ctx, "message delivery gave up", "schema", t.Schema, "message_id", id,
			"attempts", at.Attempt, "error", r.Err)
		if err := s.fail(ctx, nil, t, id, messages.CodeNetworkError,
			fmt.Sprintf("The messaging network could not be reached after %d attempts.", at.Attempt)); err != nil {
			return nil, err
		}
		// The job ends discarded with the cause in its errors, where an
		// operator finds it (platform admin jobs retry requeues the message
		// once the cause is gone).
		return nil, fmt.Errorf("deliver (last attempt; message failed %s): %w", messages.CodeNetworkError, network.Transient(r.Err))
	case r.Err != nil:
		if err := s.prep.Exec(ctx, nil, `UPDATE `+t.Table("messages")+`
			SET failing_since = coalesce(failing_since, $2::timestamptz),
			    claimed_by = CASE WHEN $3::boolean THEN claimed_by END
			WHERE id = $1::bigint AND status = 'queued'`,
			id, s.clock.Now(), it.own); err != nil {
			s.log.WarnContext(ctx, "marking a message failing", "schema", t.Schema, "message_id", id, "error", err)
		}
		return nil, fmt.Errorf("deliver: %w", network.Transient(r.Err))
	default:
		return &sentMessage{id: id, d: r.Delivery, item: i, delivered: r.Delivery.Delivered}, nil
	}
}
