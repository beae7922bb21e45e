package messages

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/sqlq"
)

// CodeDeliveryFailed is a message's error_code when the network reports it
// failed without saying why.
const CodeDeliveryFailed = "delivery_failed"

// Bounds on what a receipt may write into a message.
const (
	maxReceiptCodeLen    = 64
	maxReceiptMessageLen = 1024
)

// Receipt is the network's word on a message it accepted (network.Receipt):
// Reference is the one delivery.Service.DeliverMessage passed to the network
// ("<schema>:<message id>", see Reference); Status is StatusDelivered,
// StatusRead or StatusFailed; At defaults to now; ErrorCode and
// ErrorMessage say why it failed (defaults CodeDeliveryFailed and a generic
// sentence).
type Receipt = network.Receipt

// ReceiptOutcome is what ApplyReceipt (or Receive) did.
type ReceiptOutcome string

// The outcomes of ApplyReceipt and Receive.
const (
	// ReceiptApplied: the receipt changed the message (moved it to the
	// receipt's status, or filled the delivered_at of a read message), or
	// the inbound message was stored.
	ReceiptApplied ReceiptOutcome = "applied"
	// ReceiptUnchanged: the message is already in that status or past it,
	// or in a final one the receipt may not change (a repeated, late or
	// contradicting receipt); or the inbound message was stored before.
	ReceiptUnchanged ReceiptOutcome = "unchanged"
	// ReceiptIgnored: the reference names no outbound message of any
	// organization (an OTP's, a deleted organization's, or not one of
	// ours); or the inbound message was written to a phone that is no
	// organization's active sender number.
	ReceiptIgnored ReceiptOutcome = "ignored"
)

// ApplyReceipt records a receipt. The reference is mapped back to its
// tenant only through the central organizations Row: the organization id
// is parsed from it, the organization's stored schema is read, and the
// reference's schema must be exactly that one (db.NewTenant); anything else
// is ignored, so a receipt can never reach into another tenant.
//
// In one transaction that locks the message, the message moves only
// forward along queued → sent → delivered → read (docs/api.md, §Message
// lifecycle):
//
//   - delivered: a queued or sent message becomes delivered (delivered_at
//     = At). A queued one means the receipt overtook the delivery worker's
//     own record of the delivery (package delivery's sent record then
//     fills the network's ids and keeps the status). A read message stays read and gets delivered_at if
//     it had none (the receipts came in the wrong order);
//   - read: a queued, sent or delivered message becomes read (read_at =
//     At); delivered_at stays as it is (null until a delivered receipt
//     says when);
//   - failed: a queued, sent or delivered message becomes failed with the
//     receipt's code and text (failed_at = At); a read message cannot fail.
//
// A message the worker gave up on with network_error was delivered after
// all when a delivered or read receipt comes: it moves as a sent one would,
// its error cleared. The day's status counters move with the message, and
// the move's event (message.delivered, .read or .failed) is recorded in the
// same transaction (Config.Events). Any other combination (a repeat, a
// receipt behind the message's status, anything after failed) changes
// nothing: ReceiptUnchanged. Receipts are idempotent by these transitions,
// so a redelivered event needs no event-id bookkeeping.
func (s *Service) ApplyReceipt(ctx context.Context, r Receipt) (ReceiptOutcome, error) {
	if r.Status != StatusDelivered && r.Status != StatusRead && r.Status != StatusFailed {
		return "", fmt.Errorf("messages: receipt status %q is not delivered, read or failed", r.Status)
	}
	t, id, ok, err := s.referenceTenant(ctx, r.Reference)
	if err != nil || !ok {
		return ReceiptIgnored, err
	}
	if r.At.IsZero() {
		r.At = s.clock.Now()
	}
	if r.Status == StatusFailed {
		r.ErrorCode = clip(r.ErrorCode, maxReceiptCodeLen, CodeDeliveryFailed)
		r.ErrorMessage = clip(r.ErrorMessage, maxReceiptMessageLen,
			"The messaging network could not deliver the message.")
	}
	var outcome ReceiptOutcome
	err = s.prep.Tx(ctx, func(tx pgx.Tx) error {
		outcome = ReceiptUnchanged
		m, found, err := s.lockRow(ctx, tx, t, id)
		if err != nil {
			return err
		}
		if !found || m.Direction != DirectionOutbound {
			outcome = ReceiptIgnored
			return nil
		}
		next, changed := afterReceipt(m, r)
		if !changed {
			return nil
		}
		var after Row
		err = s.prep.Named(ctx, tx, s.q, "record_receipt", t.Quoted(), sqlq.Args{
			"id": id, "status": next.Status, "delivered_at": next.DeliveredAt, "read_at": next.ReadAt,
			"failed_at": next.FailedAt, "error_code": next.ErrorCode, "error_message": next.ErrorMessage,
			"now": s.clock.Now(),
		}, func(rows db.Rows) error {
			if !rows.Next() {
				return errors.New("the locked message is gone")
			}
			return rows.Scan(after.ScanDest()...)
		})
		if err != nil {
			return fmt.Errorf("record receipt of message %d: %w", id, err)
		}
		if err := s.moveCounters(ctx, tx, t, m, after.Status); err != nil {
			return err
		}
		outcome = ReceiptApplied
		if s.changes.Recording() {
			return s.changes.Emit(ctx, tx, t, AppendEvents(nil, m.Status, &after))
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	s.log.InfoContext(ctx, "receipt", "schema", t.Schema, "message_id", id,
		"status", r.Status, "outcome", outcome)
	return outcome, nil
}

// afterReceipt is message m as receipt r leaves it (the fields a receipt
// may change), and whether r changes it at all.
func afterReceipt(m *Row, r Receipt) (Row, bool) {
	next := *m
	// A message the worker failed with network_error reached the network
	// after all when it is delivered or read.
	lost := m.Status == StatusFailed && m.ErrorCode != nil && *m.ErrorCode == CodeNetworkError
	switch {
	case r.Status == StatusDelivered && (m.Status == StatusQueued || m.Status == StatusSent || lost):
		next.Status, next.DeliveredAt = StatusDelivered, &r.At
	case r.Status == StatusDelivered && m.Status == StatusRead && m.DeliveredAt == nil:
		next.DeliveredAt = &r.At
	case r.Status == StatusRead && (m.Status == StatusQueued || m.Status == StatusSent || m.Status == StatusDelivered || lost):
		next.Status, next.ReadAt = StatusRead, &r.At
	case r.Status == StatusFailed && (m.Status == StatusQueued || m.Status == StatusSent || m.Status == StatusDelivered):
		next.Status, next.FailedAt = StatusFailed, &r.At
		next.ErrorCode, next.ErrorMessage = &r.ErrorCode, &r.ErrorMessage
		return next, true
	default:
		return next, false
	}
	if lost {
		next.FailedAt, next.ErrorCode, next.ErrorMessage = nil, nil, nil
	}
	return next, true
}

// lockRow reads message id of tenant t in tx and locks it FOR UPDATE;
// found is false when there is none.
func (s *Service) lockRow(ctx context.Context, tx pgx.Tx, t db.Tenant, id int64) (*Row, bool, error) {
	m := new(Row)
	found := false
	err := s.prep.Named(ctx, tx, s.q, "lock_message", t.Quoted(), sqlq.Args{"id": id}, func(r db.Rows) error {
		if !r.Next() {
			return nil
		}
		found = true
		return r.Scan(m.ScanDest()...)
	})
	if err != nil {
		return nil, false, fmt.Errorf("lock message %d of %s: %w", id, t.Schema, err)
	}
	return m, found, nil
}

// moveCounters moves message m from its status's counter of its acceptance
// day to the counter of status (queued messages have no counter of their
// own; a status that did not change moves nothing).
func (s *Service) moveCounters(ctx context.Context, tx pgx.Tx, t db.Tenant, m *Row, status string) error {
	if m.Status == status {
		return nil
	}
	var delta [4]int32 // sent, delivered, read, failed
	index := map[string]int{StatusSent: 0, StatusDelivered: 1, StatusRead: 2, StatusFailed: 3}
	if i, ok := index[m.Status]; ok {
		delta[i]--
	}
	if i, ok := index[status]; ok {
		delta[i]++
	}
	err := s.prep.Named(ctx, tx, s.q, "move_counters", t.Quoted(), sqlq.Args{
		"sender_id": m.SenderNumberID, "day": Day(m.CreatedAt),
		"sent": delta[0], "delivered": delta[1], "read": delta[2], "failed": delta[3],
	}, nil)
	if err != nil {
		return fmt.Errorf("move usage counters of message %d: %w", m.ID, err)
	}
	return nil
}

// referenceTenant maps a delivery reference "<schema>:<message id>" to its
// tenant and message id, through the organization's stored schema. ok is
// false, without error, when the reference is not a message of an existing
// organization.
func (s *Service) referenceTenant(ctx context.Context, ref string) (db.Tenant, int64, bool, error) {
	orgID, schema, id, ok := db.ParseReference(ref, ":")
	if !ok {
		return db.Tenant{}, 0, false, nil
	}
	var stored sql.NullString
	err := s.prep.Named(ctx, nil, s.q, "organization_schema", "", sqlq.Args{"org_id": orgID},
		func(r db.Rows) error {
			if r.Next() {
				return r.Scan(&stored)
			}
			return nil
		})
	if err != nil {
		return db.Tenant{}, 0, false, fmt.Errorf("organization of reference %q: %w", ref, err)
	}
	t, ok := db.ReferenceTenant(orgID, schema, stored)
	return t, id, ok, nil
}

// clip returns s cut to at most n bytes on a rune boundary, or def when s is
// blank.
func clip(s string, n int, def string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return def
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
