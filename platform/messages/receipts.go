package messages

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
)

// CodeDeliveryFailed is a message's error_code when the network reports it
// failed without saying why.
const CodeDeliveryFailed = "delivery_failed"

// Bounds on what a receipt may write into a message.
const (
	maxReceiptCodeLen    = 64
	maxReceiptMessageLen = 1024
)

// Receipt is the network's word on a message it accepted: delivered to the
// recipient, or failed.
type Receipt struct {
	// Reference is the one DeliverMessage passed to the network
	// ("<schema>:<message id>", see Reference).
	Reference string
	// Status is StatusDelivered or StatusFailed.
	Status string
	// At is when it was delivered or failed.
	At time.Time
	// ErrorCode and ErrorMessage say why it failed (StatusFailed only).
	// Defaults CodeDeliveryFailed and a generic sentence.
	ErrorCode    string
	ErrorMessage string
}

// ReceiptOutcome is what ApplyReceipt did.
type ReceiptOutcome string

// The outcomes of ApplyReceipt.
const (
	// ReceiptApplied: the message moved to the receipt's status.
	ReceiptApplied ReceiptOutcome = "applied"
	// ReceiptUnchanged: the message is already in that status, or in a final
	// one the receipt may not change (a repeated or contradicting receipt).
	ReceiptUnchanged ReceiptOutcome = "unchanged"
	// ReceiptIgnored: the reference names no message of any organization
	// (an OTP's, a deleted organization's, or not one of ours).
	ReceiptIgnored ReceiptOutcome = "ignored"
)

// ApplyReceipt records a delivery receipt. The reference is mapped back to
// its tenant only through the central organizations row: the organization id
// is parsed from it, the organization's stored schema is read, and the
// reference's schema must be exactly that one (db.NewTenant); anything else
// is ignored, so a receipt can never reach into another tenant.
//
// In one transaction that locks the message:
//
//   - delivered: a sent message becomes delivered (delivered_at = At). So
//     does a queued one: the receipt overtook the delivery worker's own record
//     of the delivery (markSent then fills the network's ids and keeps the
//     status), and a message the worker gave up on with network_error (the
//     network did deliver it after all).
//   - failed: a queued or sent message becomes failed with the receipt's
//     code and text.
//
// The day's status counters move with the message. Any other combination
// (a repeat, delivered after failed, failed after delivered) changes nothing:
// ReceiptUnchanged. Receipts are idempotent by these transitions, so a
// redelivered event needs no event-id bookkeeping.
func (s *Service) ApplyReceipt(ctx context.Context, r Receipt) (ReceiptOutcome, error) {
	if r.Status != StatusDelivered && r.Status != StatusFailed {
		return "", fmt.Errorf("messages: receipt status %q is not delivered or failed", r.Status)
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
	outcome := ReceiptUnchanged
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		m, err := loadRow(ctx, tx, t, id, true)
		if e, ok := apperr.As(err); ok && e.Kind == apperr.KindNotFound {
			outcome = ReceiptIgnored
			return nil
		}
		if err != nil {
			return err
		}
		if !receiptApplies(m, r.Status) {
			return nil
		}
		now := s.clock.Now()
		if r.Status == StatusDelivered {
			_, err = tx.NewRaw(`UPDATE ?.messages SET status = 'delivered', delivered_at = ?,
				error_code = NULL, error_message = NULL, failed_at = NULL, updated_at = ? WHERE id = ?`,
				t.Ident(), r.At, now, id).Exec(ctx)
		} else {
			_, err = tx.NewRaw(`UPDATE ?.messages SET status = 'failed', error_code = ?, error_message = ?,
				failed_at = ?, updated_at = ? WHERE id = ?`,
				t.Ident(), r.ErrorCode, r.ErrorMessage, r.At, now, id).Exec(ctx)
		}
		if err != nil {
			return fmt.Errorf("record receipt of message %d: %w", id, err)
		}
		if err := moveCounters(ctx, tx, t, m, r.Status); err != nil {
			return err
		}
		outcome = ReceiptApplied
		return nil
	})
	if err != nil {
		return "", err
	}
	s.log.InfoContext(ctx, "delivery receipt", "schema", t.Schema, "message_id", id,
		"status", r.Status, "outcome", outcome)
	return outcome, nil
}

// receiptApplies reports whether a receipt of status moves message m.
func receiptApplies(m *row, status string) bool {
	switch status {
	case StatusDelivered:
		return m.Status == StatusQueued || m.Status == StatusSent ||
			(m.Status == StatusFailed && m.ErrorCode != nil && *m.ErrorCode == CodeNetworkError)
	case StatusFailed:
		return m.Status == StatusQueued || m.Status == StatusSent
	default:
		return false
	}
}

// moveCounters moves message m from its status's counter of its acceptance
// day to the counter of status (queued messages have no counter of their own).
func moveCounters(ctx context.Context, tx bun.Tx, t db.Tenant, m *row, status string) error {
	delta := map[string]int{StatusSent: 0, StatusDelivered: 0, StatusFailed: 0}
	if m.Status != StatusQueued {
		delta[m.Status]--
	}
	delta[status]++
	_, err := tx.NewRaw(`INSERT INTO ?0.daily_usage AS u (sender_number_id, day, side, sent, delivered, failed)
		VALUES (?1, ?2::date, 'deliver', greatest(?3, 0), greatest(?4, 0), greatest(?5, 0))
		ON CONFLICT (sender_number_id, day, side) DO UPDATE
		   SET sent = u.sent + ?3, delivered = u.delivered + ?4, failed = u.failed + ?5`,
		t.Ident(), m.SenderNumberID, dayOf(m.CreatedAt),
		delta[StatusSent], delta[StatusDelivered], delta[StatusFailed]).Exec(ctx)
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
	schema, rawID, found := strings.Cut(ref, ":")
	rawOrg, isTenant := strings.CutPrefix(schema, db.TenantPrefix)
	if !found || !isTenant {
		return db.Tenant{}, 0, false, nil
	}
	orgID, err1 := strconv.ParseInt(rawOrg, 10, 64)
	id, err2 := strconv.ParseInt(rawID, 10, 64)
	if err1 != nil || err2 != nil || orgID <= 0 || id <= 0 {
		return db.Tenant{}, 0, false, nil //nolint:nilerr // a reference that does not parse is not ours
	}
	var stored sql.NullString
	err := s.db.NewRaw(`SELECT schema_name FROM central.organizations WHERE id = ?`, orgID).Scan(ctx, &stored)
	if isNoRows(err) || (err == nil && !stored.Valid) {
		return db.Tenant{}, 0, false, nil
	}
	if err != nil {
		return db.Tenant{}, 0, false, fmt.Errorf("organization of reference %q: %w", ref, err)
	}
	t, err := db.NewTenant(orgID, stored.String)
	if err != nil || t.Schema != schema {
		return db.Tenant{}, 0, false, nil //nolint:nilerr // a stale or foreign schema name is not ours
	}
	return t, id, true, nil
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
