package messages

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/bizmsg/platform/jobs"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/throttle"
)

var _ jobs.MessageDeliverer = (*Service)(nil)

// DeliverMessage delivers the message of a delivery job (jobs.MessageDeliverer):
//
//  1. it reserves a token of the sender's bucket and waits for it (up to
//     MaxInlineWait) or asks to be snoozed for exactly the delay; the snoozed
//     run finds its token reserved under the job's ticket. The bucket's limit
//     is the one the sender's last delivery read (senderCache); a job without
//     a sender id, or the first delivery of a sender in this process, reads
//     the message first (loadDelivery) to learn it;
//  2. in one statement (claimLoad) it locks and reads the message with its
//     sender and the organization's limits and, on the message's first run
//     past the throttle, claims the message's place under the sender's
//     current daily limit for the day the message was accepted. A message
//     already sent or failed is done (a job run twice, or after a crash,
//     changes nothing). A limit lowered since acceptance, or a suspended or
//     rejected sender, fails the message (daily_limit_exceeded,
//     sender_not_active) undelivered (claimLocked). The check comes after
//     the throttle so that it sees the limit as late as possible;
//  3. it delivers with the reference "<schema>:<id>": a delivery the network
//     already made (a crash before the outcome was recorded) is returned
//     again, not repeated;
//  4. it records the outcome: sent with the network's ids, or failed with the
//     network's refusal code. A transient failure is returned for River to
//     retry, except on the last attempt, which fails the message with
//     network_error.
func (s *Service) DeliverMessage(ctx context.Context, args jobs.DeliverArgs, at jobs.DeliveryAttempt) (time.Duration, error) {
	t, err := db.NewTenant(args.OrgID, args.Schema)
	if err != nil {
		return 0, &network.PermanentError{Code: network.CodeInvalidMessage, Message: err.Error()}
	}
	senderID := args.SenderID
	limit, known := s.known.limit(t, senderID)
	if senderID == 0 || !known {
		m, _, org, err := s.loadDelivery(ctx, t, args.MessageID)
		if err != nil {
			return 0, missing(t, args.MessageID, err)
		}
		if m.Status != StatusQueued {
			return 0, nil
		}
		senderID, limit = m.SenderNumberID, s.limitOf(org)
		s.known.putLimit(t, senderID, limit)
	}

	delay, err := s.throttle.Reserve(ctx, throttleKey(t, senderID), at.Ticket(), limit)
	if err != nil {
		return 0, fmt.Errorf("throttle: %w", err)
	}
	if delay > s.cfg.MaxInlineWait {
		return delay, nil
	}
	if delay > 0 {
		timer := time.NewTimer(delay)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return 0, ctx.Err()
		}
	}

	c, err := s.claimLoad(ctx, t, args.MessageID)
	if err != nil {
		return 0, missing(t, args.MessageID, err)
	}
	m, sn := c.m, c.sn
	s.known.putLimit(t, m.SenderNumberID, s.limitOf(c.org))
	switch {
	case m.Status != StatusQueued:
		return 0, nil
	case m.DispatchedAt == nil && !c.claimed:
		// Not claimed: the sender may not send now, or its day's limit is
		// reached (or the message changed in between): decide under a lock.
		proceed, err := s.claimLocked(ctx, t, m.ID, sn, c.org)
		if err != nil || !proceed {
			return 0, err
		}
	}

	d, err := s.net.Deliver(ctx, network.Message{
		Reference: Reference(t, m.ID),
		FromPhone: sn.phone,
		ToPhone:   m.ToPhone,
		Type:      m.Type,
		Content:   m.Content,
		FileName:  deref(m.FileName),
		FileSize:  deref(m.FileSize),
		FileType:  deref(m.FileType),
		Duration:  deref(m.Duration),
	})
	var refusal *network.PermanentError
	switch {
	case errors.As(err, &refusal):
		return 0, s.fail(ctx, s.db, t, m.ID, refusal.Code, refusal.Message)
	case err != nil && at.Last():
		s.log.WarnContext(ctx, "message delivery gave up", "schema", t.Schema, "message_id", m.ID,
			"attempts", at.Attempt, "error", err)
		return 0, s.fail(ctx, s.db, t, m.ID, CodeNetworkError,
			fmt.Sprintf("The messaging network could not be reached after %d attempts.", at.Attempt))
	case err != nil:
		return 0, fmt.Errorf("deliver: %w", err)
	}
	return 0, s.markSent(ctx, t, m.ID, d)
}

// missing turns a message that does not exist into the job's permanent
// error; other errors pass through.
func missing(t db.Tenant, id int64, err error) error {
	if e, ok := apperr.As(err); ok && e.Kind == apperr.KindNotFound {
		return &network.PermanentError{Code: network.CodeInvalidMessage,
			Message: fmt.Sprintf("message %d does not exist in %s", id, t.Schema)}
	}
	return err
}

// claimed is a message as claimLoad read it (before its claim), with its
// sender and organization, and whether the statement claimed it.
type claimed struct {
	m       *row
	sn      senderState
	org     orgSettings
	claimed bool
}

// claimLoad is the common case of the daily-limit claim, with the read of
// the message, in one statement (one round trip, no explicit transaction):
// it locks the message and reads it with its sender and the organization's
// limits; if the message is queued and not yet dispatched and the sender is
// active, it counts the message in its acceptance day's dispatched counter
// while that counter is under the sender's limit, and stamps dispatched_at.
// The message read is its state before the claim. A message that was not
// claimed though it could have been (the sender may not send, or the limit
// is reached) goes to claimLocked, which decides and records the failure
// under its lock. A missing message is an apperr not-found.
func (s *Service) claimLoad(ctx context.Context, t db.Tenant, id int64) (claimed, error) {
	var out []struct {
		row
		deliveryJoin
		Claimed bool `bun:"claimed"`
	}
	now := s.clock.Now()
	err := s.db.NewRaw(`WITH m AS (
		  SELECT `+deliveryColumns+`
		    FROM `+deliveryFrom+`
		   WHERE m.id = ?2 FOR UPDATE OF m),
		u AS (
		  UPDATE ?0.daily_usage d SET dispatched = d.dispatched + 1 FROM m
		   WHERE m.status = 'queued' AND m.dispatched_at IS NULL AND m.sn_status = 'active'
		     AND d.sender_number_id = m.sender_number_id
		     AND d.day = (m.created_at AT TIME ZONE 'UTC')::date
		     AND d.dispatched < coalesce(m.sn_daily_limit_override, m.default_daily_limit)
		  RETURNING d.dispatched),
		x AS (
		  UPDATE ?0.messages x SET dispatched_at = ?3, updated_at = ?3
		    FROM u WHERE x.id = ?2 RETURNING x.id)
		SELECT m.*, EXISTS (SELECT 1 FROM x) AS claimed FROM m`, t.Ident(), t.OrgID, id, now).Scan(ctx, &out)
	if err != nil {
		return claimed{}, fmt.Errorf("claim daily limit of message %d of %s: %w", id, t.Schema, err)
	}
	if len(out) == 0 {
		return claimed{}, apperr.NotFound("message")
	}
	o := out[0]
	sn, org := o.split()
	return claimed{m: &o.row, sn: sn, org: org, claimed: o.Claimed}, nil
}

// claimLocked is claim in a transaction that locks the message: the path
// that fails a message (limit reached, sender not active).
func (s *Service) claimLocked(ctx context.Context, t db.Tenant, id int64, sn senderState, org orgSettings) (bool, error) {
	var proceed bool
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		m, err := loadRow(ctx, tx, t, id, true)
		if err != nil {
			return err
		}
		if m.Status != StatusQueued {
			return nil
		}
		if m.DispatchedAt != nil {
			proceed = true
			return nil
		}
		if sn.status != senders.StatusActive {
			return s.fail(ctx, tx, t, m.ID, CodeSenderNotActive,
				fmt.Sprintf("The sender number became %s before the message was delivered.", sn.status))
		}
		limit := sn.dailyLimit(org)
		var n int
		err = tx.NewRaw(`UPDATE ?.daily_usage SET dispatched = dispatched + 1
			WHERE sender_number_id = ? AND day = ?::date AND dispatched < ?
			RETURNING dispatched`, t.Ident(), m.SenderNumberID, dayOf(m.CreatedAt), limit).Scan(ctx, &n)
		if isNoRows(err) {
			return s.fail(ctx, tx, t, m.ID, CodeDailyLimitExceeded,
				fmt.Sprintf("The sender number's daily limit (now %d) was reached before the message was delivered.", limit))
		}
		if err != nil {
			return fmt.Errorf("claim daily limit: %w", err)
		}
		now := s.clock.Now()
		if _, err := tx.NewRaw(`UPDATE ?.messages SET dispatched_at = ?, updated_at = ? WHERE id = ?`,
			t.Ident(), now, now, m.ID).Exec(ctx); err != nil {
			return fmt.Errorf("mark message dispatched: %w", err)
		}
		proceed = true
		return nil
	})
	return proceed, err
}

// senderState is the sender as delivery sees it.
type senderState struct {
	phone    string
	status   senders.Status
	override *int
}

// dailyLimit is the sender's override, else the organization's default.
func (sn senderState) dailyLimit(org orgSettings) int {
	if sn.override != nil {
		return *sn.override
	}
	return org.DefaultDailyLimit
}

// deliveryColumns and deliveryFrom read a message (alias m) with its sender
// and its organization's limits, as deliveryJoin scans them (?0 is the
// tenant schema, ?1 the organization's id).
const (
	deliveryColumns = `m.*, s.phone AS sn_phone, s.status AS sn_status,
		       s.daily_limit_override AS sn_daily_limit_override,
		       o.default_daily_limit, o.sender_rate, o.sender_burst`
	deliveryFrom = `?0.messages m
		  JOIN ?0.sender_numbers s ON s.id = m.sender_number_id
		  JOIN central.organizations o ON o.id = ?1`
)

// deliveryJoin is what delivery reads of a message's sender and organization.
type deliveryJoin struct {
	SenderPhone       string         `bun:"sn_phone"`
	SenderStatus      senders.Status `bun:"sn_status"`
	Override          *int           `bun:"sn_daily_limit_override"`
	DefaultDailyLimit int            `bun:"default_daily_limit"`
	SenderRate        *float64       `bun:"sender_rate"`
	SenderBurst       *int           `bun:"sender_burst"`
}

func (j deliveryJoin) split() (senderState, orgSettings) {
	return senderState{phone: j.SenderPhone, status: j.SenderStatus, override: j.Override},
		orgSettings{DefaultDailyLimit: j.DefaultDailyLimit, SenderRate: j.SenderRate, SenderBurst: j.SenderBurst}
}

// loadDelivery reads message id with its sender and its organization's
// limits, in one query, without locking it. A missing message is an apperr
// not-found.
func (s *Service) loadDelivery(ctx context.Context, t db.Tenant, id int64) (*row, senderState, orgSettings, error) {
	var out []struct {
		row
		deliveryJoin
	}
	err := s.db.NewRaw(`SELECT `+deliveryColumns+` FROM `+deliveryFrom+` WHERE m.id = ?2`,
		t.Ident(), t.OrgID, id).Scan(ctx, &out)
	if err != nil {
		return nil, senderState{}, orgSettings{}, fmt.Errorf("load message %d of %s for delivery: %w", id, t.Schema, err)
	}
	if len(out) == 0 {
		return nil, senderState{}, orgSettings{}, apperr.NotFound("message")
	}
	o := out[0]
	sn, org := o.split()
	return &o.row, sn, org, nil
}

// limitOf is the organization's sender throttle, else the configured default.
func (s *Service) limitOf(o orgSettings) throttle.Limit {
	l := throttle.Limit{Rate: s.cfg.SenderRate, Burst: s.cfg.SenderBurst}
	if o.SenderRate != nil && *o.SenderRate > 0 {
		l.Rate = *o.SenderRate
	}
	if o.SenderBurst != nil && *o.SenderBurst > 0 {
		l.Burst = *o.SenderBurst
	}
	return l
}

// throttleKey names a sender's bucket.
func throttleKey(t db.Tenant, senderID int64) string { return t.Schema + ":" + itoa(senderID) }

// markSent records a delivery: status sent with the network's ids, and the
// day's sent counter, in one statement. A message no longer queued is left
// alone (a concurrent run recorded it already), except one a delivery receipt
// (ApplyReceipt) moved to delivered or failed before this record: it gets the
// network's ids and keeps the receipt's status (never downgraded to sent).
func (s *Service) markSent(ctx context.Context, t db.Tenant, id int64, d network.Delivery) error {
	now := s.clock.Now()
	sentAt := d.DeliveredAt
	if sentAt.IsZero() {
		sentAt = now
	}
	_, err := s.db.NewRaw(`WITH m AS (
		  UPDATE ?0.messages
		     SET status = CASE WHEN status = 'queued' THEN 'sent' ELSE status END,
		         message_id = ?1, conversation_id = ?2, recipient_user_id = ?3,
		         sent_at = ?4, updated_at = ?5
		   WHERE id = ?6 AND (status = 'queued' OR (status IN ('delivered', 'failed') AND message_id IS NULL))
		  RETURNING sender_number_id, created_at, status)
		UPDATE ?0.daily_usage u SET sent = u.sent + 1 FROM m
		 WHERE m.status = 'sent'
		   AND u.sender_number_id = m.sender_number_id AND u.day = (m.created_at AT TIME ZONE 'UTC')::date`,
		t.Ident(), d.MessageID, d.ConversationID, d.RecipientID, sentAt, now, id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("record delivery of message %d: %w", id, err)
	}
	return nil
}

// fail marks a queued message failed with code and text, and counts it in
// its day's failed counter, in one statement.
func (s *Service) fail(ctx context.Context, idb bun.IDB, t db.Tenant, id int64, code, text string) error {
	now := s.clock.Now()
	_, err := idb.NewRaw(`WITH m AS (
		  UPDATE ?0.messages
		     SET status = 'failed', error_code = ?1, error_message = ?2, failed_at = ?3, updated_at = ?3
		   WHERE id = ?4 AND status = 'queued'
		  RETURNING sender_number_id, created_at)
		UPDATE ?0.daily_usage u SET failed = u.failed + 1 FROM m
		 WHERE u.sender_number_id = m.sender_number_id AND u.day = (m.created_at AT TIME ZONE 'UTC')::date`,
		t.Ident(), code, text, now, id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("record failure of message %d: %w", id, err)
	}
	s.log.InfoContext(ctx, "message failed", "schema", t.Schema, "message_id", id, "error_code", code)
	return nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
