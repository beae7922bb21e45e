package delivery

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/sqlq"

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
	one, many := "mark_one_sent", "mark_sent"
	if rows {
		one, many = "mark_one_sent_rows", "mark_sent_rows"
	}
	var query string
	var args sqlq.Args
	if len(sent) == 1 {
		m := sent[0]
		query = one
		args = sqlq.Args{"message_id": m.d.MessageID, "conversation_id": m.d.ConversationID, "recipient_id": m.d.RecipientID,
			"sent_at": sentAt(m.d, now), "delivered": m.delivered, "now": now, "id": m.id}
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
		query = many
		args = sqlq.Args{"ids": ids, "message_ids": netIDs, "conversation_ids": convs, "recipient_ids": recipients,
			"sent_ats": at, "delivered": delivered, "now": now}
	}
	text, vals, err := s.q.Pgx(query, t.Quoted(), args)
	switch {
	case err != nil:
	case !rows:
		err = s.prep.Exec(ctx, nil, text, vals...)
	default:
		err = s.prep.Tx(ctx, func(tx pgx.Tx) error {
			_, evs, err := s.changes.Run(ctx, tx, text, vals, 2*len(sent))
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

// fail marks a queued message failed with code and text, and counts it in
// its day's failed counter, in one statement, with its message.failed
// event: in tx (claimLocked's), or, when tx is nil, in a transaction of its
// own with an event recorder and alone without one.
func (s *Service) fail(ctx context.Context, tx pgx.Tx, t db.Tenant, id int64, code, text string) error {
	if tx == nil && s.changes.Recording() {
		return s.prep.Tx(ctx, func(tx pgx.Tx) error { return s.fail(ctx, tx, t, id, code, text) })
	}
	query, args, err := s.q.Pgx("fail", t.Quoted(), sqlq.Args{"code": code, "text": text, "now": s.clock.Now(), "id": id})
	if err != nil {
		return fmt.Errorf("record failure of message %d: %w", id, err)
	}
	_, evs, err := s.changes.Run(ctx, tx, query, args, 1)
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
// conversation back: blocker, statements.go), and on the job's last
// attempt at its own message fails the message with network_error as well.
// A transient failure
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
		if err := s.query(ctx, nil, t, "mark_failing",
			sqlq.Args{"id": id, "now": s.clock.Now(), "keep_claim": it.own}, nil); err != nil {
			s.log.WarnContext(ctx, "marking a message failing", "schema", t.Schema, "message_id", id, "error", err)
		}
		return nil, fmt.Errorf("deliver: %w", network.Transient(r.Err))
	default:
		return &sentMessage{id: id, d: r.Delivery, item: i, delivered: r.Delivery.Delivered}, nil
	}
}
