package messages

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/lookup"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/senders"
)

// SendResult is an accepted send: a domain value, which the doors render
// (202 with {"data": <Resource>}).
type SendResult struct {
	// MessageID is the accepted message's id.
	MessageID int64
	// Message is the message as accepted (queued); zero for a replay, whose
	// message is the first acceptance's (Resource).
	Message Message
	// Resource is the message as the API showed it when it was accepted
	// (its JSON, Message.AppendJSON). A replay returns the first
	// acceptance's bytes unchanged, as stored under the Idempotency-Key, so
	// that its answer is byte for byte the first one.
	Resource json.RawMessage
	// Replayed reports that the answer is an earlier send's under the same
	// Idempotency-Key: nothing was sent this time.
	Replayed bool
}

// Send validates req and, if the sender may send to the recipient today,
// accepts the message: it is stored as queued with its delivery job by one
// statement, shared with the tenant's concurrent sends (see the package
// comment). Errors: 422 validation_failed with
// every field error; 422 sender_not_found, sender_not_active (English
// message), sender_owner_unverified (Arabic message); 422
// recipient_unreachable with a reason_code; 429 daily_limit_exceeded with a
// Retry-After up to the next UTC midnight; 422 idempotency_key_reused; 503
// network_unavailable.
func (s *Service) Send(ctx context.Context, t db.Tenant, req *SendRequest) (SendResult, error) {
	d, err := req.validate()
	if err != nil {
		return SendResult{}, err
	}
	now := s.clock.Now()
	key, fp := req.IdempotencyKey, d.fingerprint()
	if key != "" {
		if res, found, err := s.replay(ctx, nil, t, key, fp, now); err != nil || found {
			return res, err
		}
	}

	// The recipient check needs the network, so it runs before (and outside)
	// the acceptance statement. It needs the sender's phone: the request's,
	// else the one this process remembers for the sender's id, else the
	// sender's row.
	ref := d.Sender.ref()
	var resolved *senders.Sender
	senderPhone := ref.Phone
	if senderPhone == "" {
		if p, ok := s.known.phone(t, ref.ID); ok {
			senderPhone = p
		} else {
			sn, err := s.checkSender(ctx, t, ref)
			if err != nil {
				return SendResult{}, err
			}
			resolved, senderPhone = &sn, sn.Phone
		}
	}
	reach, err := lookup.Check(ctx, s.net, d.ToPhone, senderPhone)
	if err != nil {
		return SendResult{}, err
	}
	if !reach.CanReceive {
		// A sender error comes before the recipient's.
		if resolved == nil {
			if _, err := s.checkSender(ctx, t, ref); err != nil {
				return SendResult{}, err
			}
		}
		return SendResult{}, errUnreachable(reach.ReasonCode)
	}

	var (
		templateID  *int64
		templateRef *string
	)
	if d.Template != nil {
		// The one extra read of a template send: the template, to render.
		// Its approval is checked again by the acceptance statement.
		tr, err := s.renderTemplate(ctx, t, d.Template)
		if err != nil {
			// A sender error comes before the template's, as before the
			// recipient's.
			if resolved == nil {
				if _, serr := s.checkSender(ctx, t, ref); serr != nil {
					return SendResult{}, serr
				}
			}
			return SendResult{}, err
		}
		templateID, templateRef, d.Content = &tr.id, &tr.ref, tr.text
	}

	r := &row{
		Message: Message{
			Direction:       DirectionOutbound,
			ToPhone:         d.ToPhone,
			RecipientUserID: reach.RecipientID,
			Type:            d.Type,
			Content:         d.Content,
			FileName:        d.FileName,
			FileSize:        d.FileSize,
			FileType:        d.FileType,
			Duration:        d.Duration,
			Status:          StatusQueued,
			ClientReference: d.ClientReference,
			TemplateID:      templateID,
			CreatedAt:       now,
		},
		UpdatedAt:   now,
		TemplateRef: templateRef,
	}
	if key == "" && templateID != nil {
		// Template sends never batch: their statement checks the template
		// too (acceptSQL), which the batch statement of the plain sends
		// does not carry.
		res, err := s.acceptAlone(ctx, t, ref, r)
		if err != nil {
			return SendResult{}, err
		}
		s.known.putPhone(t, r.SenderNumberID, senderPhone)
		return res, nil
	}
	if key == "" {
		// One statement, one commit, no transaction to open; concurrent
		// sends of the tenant share it (acceptBatch).
		a, err := s.acceptances.Do(ctx, t, acceptance{ref: ref, r: r})
		if err == nil {
			err = a.err
		}
		if err != nil {
			return SendResult{}, err
		}
		res := a.res
		s.known.putPhone(t, r.SenderNumberID, senderPhone)
		return res, nil
	}

	var res SendResult
	err = s.prep.Tx(ctx, func(tx pgx.Tx) error {
		claimed, err := s.claimKey(ctx, tx, t, key, fp, now, now.Add(-s.cfg.IdempotencyTTL))
		if err != nil {
			return err
		}
		if !claimed {
			// A concurrent send with this key committed first (this
			// statement waited for it): answer as it did.
			r, found, err := s.replay(ctx, tx, t, key, fp, now)
			if err == nil && !found {
				err = errors.New("idempotency key conflicted but its record is gone")
			}
			if err == nil {
				res = r
				err = errReplayed
			}
			return err
		}
		if res, err = s.accept(ctx, tx, t, ref, r); err != nil {
			return err
		}
		return s.storeAnswer(ctx, tx, t, key, res)
	})
	if errors.Is(err, errReplayed) {
		return res, nil
	}
	if err != nil {
		return SendResult{}, s.word(ctx, t, err)
	}
	s.known.putPhone(t, r.SenderNumberID, senderPhone)
	return res, nil
}

// checkSender resolves the sender named by ref and checks that it may send:
// the sender errors of docs/api.md, §Sending (sender_not_found,
// sender_not_active, sender_owner_unverified, a phone naming another number
// than the id).
func (s *Service) checkSender(ctx context.Context, t db.Tenant, ref senders.SenderRef) (senders.Sender, error) {
	sn, err := s.senders.Resolve(ctx, t, ref)
	if err != nil {
		return senders.Sender{}, err
	}
	if err := senders.CheckSendable(sn); err != nil {
		return senders.Sender{}, err
	}
	return sn, nil
}

// accept stores r (queued) with its delivery job in tx if the sender named
// by ref may send today: one statement (see the package comment) and
// River's insert of the job. It renders the answer and fills r's id and
// sender. A refusal stores nothing and is a *refused error, which the
// caller words (refusal) once the transaction is over: wording may read the
// sender on another connection, and must not hold tx's meanwhile.
func (s *Service) accept(ctx context.Context, tx pgx.Tx, t db.Tenant, ref senders.SenderRef, r *row) (SendResult, error) {
	var (
		senderID, messageID  *int64
		phone                *string
		status               *senders.Status
		limit                *int
		optedOut, windowOpen *bool
		approved             = true
	)
	args := []any{t.OrgID, ref.Phone, r.ToPhone, r.RecipientUserID, r.Type, r.Content, r.FileName, r.FileSize,
		r.FileType, r.Duration, r.ClientReference, r.CreatedAt}
	template := r.TemplateID != nil
	if template {
		args = append(args, *r.TemplateID, r.TemplateRef)
	}
	if ref.ID > 0 {
		args = append(args, ref.ID)
	}
	err := s.prep.Query(ctx, tx, acceptSQL(t, ref.ID > 0, s.cfg.ServiceWindow, template), args, func(rows db.Rows) error {
		if !rows.Next() {
			return errors.New("no result row")
		}
		dest := []any{&senderID, &phone, &status, &limit, &messageID, &optedOut, &windowOpen}
		if template {
			dest = append(dest, &approved)
		}
		return rows.Scan(dest...)
	})
	if err != nil {
		return SendResult{}, fmt.Errorf("accept message: %w", err)
	}
	if messageID == nil {
		return SendResult{}, &refused{ref: ref, id: senderID, phone: phone, status: status, limit: limit, at: r.CreatedAt,
			optedOut: optedOut != nil && *optedOut, windowClosed: windowOpen != nil && !*windowOpen,
			templateNotApproved: !approved}
	}
	r.ID, r.SenderNumberID = *messageID, *senderID
	if err := s.enqueue(ctx, tx, t, r); err != nil {
		return SendResult{}, err
	}
	return render(r)
}

// acceptAlone accepts r in a transaction of its own (accept).
func (s *Service) acceptAlone(ctx context.Context, t db.Tenant, ref senders.SenderRef, r *row) (SendResult, error) {
	var res SendResult
	err := s.prep.Tx(ctx, func(tx pgx.Tx) error {
		var err error
		res, err = s.accept(ctx, tx, t, ref, r)
		return err
	})
	if err != nil {
		return SendResult{}, s.word(ctx, t, err)
	}
	return res, nil
}

// refused is an acceptance the statement refused, with what it read of the
// sender (nil when it found none) and the recipient.
type refused struct {
	ref    senders.SenderRef
	id     *int64
	phone  *string
	status *senders.Status
	limit  *int
	at     time.Time
	// optedOut: the recipient is on the opt-out list; windowClosed: the
	// service window is closed for this message; templateNotApproved: its
	// template is no longer approved.
	optedOut, windowClosed, templateNotApproved bool
}

func (r *refused) Error() string { return "acceptance refused" }

// word turns a *refused error into the refusal the client reads; other
// errors pass through.
func (s *Service) word(ctx context.Context, t db.Tenant, err error) error {
	var r *refused
	if !errors.As(err, &r) {
		return err
	}
	return s.refusal(ctx, t, r)
}

// enqueue inserts the delivery jobs of the accepted messages rows in tx,
// with River's InsertManyFastTx.
func (s *Service) enqueue(ctx context.Context, tx pgx.Tx, t db.Tenant, rows ...*row) error {
	params := make([]river.InsertManyParams, len(rows))
	for i, r := range rows {
		params[i] = queue.DeliveryJob(queue.DeliverArgs{
			OrgID: t.OrgID, Schema: t.Schema, MessageID: r.ID, SenderID: r.SenderNumberID,
		})
	}
	if _, err := s.jobs.InsertManyFastTx(ctx, tx, params); err != nil {
		return fmt.Errorf("enqueue %d deliveries: %w", len(rows), err)
	}
	return nil
}

// render is the result of the acceptance of r: the message and its
// resource, as json.Marshal writes it (the bytes the doors answered with
// before they rendered the answer themselves).
func render(r *row) (SendResult, error) {
	m := r.message()
	res, err := json.Marshal(m)
	if err != nil {
		return SendResult{}, fmt.Errorf("render message %d: %w", r.ID, err)
	}
	return SendResult{MessageID: r.ID, Message: m, Resource: res}, nil
}

// The answer stored under an Idempotency-Key is the doors' answer to the
// send, as the idempotency_keys table has always held it: the status 202
// and the body {"data": <resource>}, so that a key stored by one version
// replays in another. storedStatus and storedBody write it; resourceOf
// reads the resource back.
const (
	storedStatus = 202
	storedPrefix = `{"data":`
	storedSuffix = `}`
)

// storedBody is the body stored for an accepted send's resource.
func storedBody(resource []byte) []byte {
	b := make([]byte, 0, len(storedPrefix)+len(resource)+len(storedSuffix))
	b = append(b, storedPrefix...)
	b = append(b, resource...)
	return append(b, storedSuffix...)
}

// resourceOf is the resource of a stored body (storedBody), unchanged.
func resourceOf(body []byte) ([]byte, bool) {
	if !bytes.HasPrefix(body, []byte(storedPrefix)) || !bytes.HasSuffix(body, []byte(storedSuffix)) ||
		len(body) < len(storedPrefix)+len(storedSuffix)+1 {
		return nil, false
	}
	return body[len(storedPrefix) : len(body)-len(storedSuffix)], true
}

// refusal is the error of an acceptance that stored nothing, in the order
// of docs/api.md §Sending: the sender's (read by the statement), the
// opt-out, the template, the service window, else the daily limit's.
func (s *Service) refusal(ctx context.Context, t db.Tenant, r *refused) error {
	if r.id == nil || (r.ref.Phone != "" && *r.phone != r.ref.Phone) {
		// No such sender, or id and phone name different numbers: the
		// senders service words those errors.
		if _, err := s.checkSender(ctx, t, r.ref); err != nil {
			return err
		}
		return fmt.Errorf("accept message: sender %+v appeared during the send", r.ref)
	}
	if err := senders.CheckSendable(senders.Sender{Status: *r.status}); err != nil {
		return err
	}
	switch {
	case r.optedOut:
		return apperr.Invalid(CodeRecipientOptedOut,
			"The recipient has opted out of messages from this organization (they wrote STOP, or were added to the opt-out list).")
	case r.templateNotApproved:
		return errTemplateNotApproved()
	case r.windowClosed:
		return apperr.Invalid(CodeOutsideServiceWindow,
			"The recipient has not written to this sender number within the service window: only a template message may be sent.")
	}
	return errDailyLimit(*r.limit, r.at)
}

// errReplayed rolls back the transaction of a send whose idempotency key was
// answered by a concurrent send.
var errReplayed = errors.New("answered by an earlier send with the same idempotency key")

// errUnreachable is the 422 for a recipient the lookup rule refuses.
func errUnreachable(reason string) *apperr.Error {
	msg := "The recipient cannot receive messages."
	if r := lookup.Explain(reason); r != "" {
		msg = "The recipient cannot receive messages: " + r
	}
	e := apperr.Invalid(CodeRecipientUnreachable, msg)
	e.Details = map[string]any{"reason_code": reason}
	return e
}

// errDailyLimit is the 429 for a sender that used its allowance (limit) for
// today.
func errDailyLimit(limit int, now time.Time) error {
	resets := nextMidnight(now)
	e := apperr.RateLimited(CodeDailyLimitExceeded,
		fmt.Sprintf("The sender number has reached its daily limit of %d messages. The limit resets at %s.",
			limit, resets.Format(time.RFC3339)),
		resets.Sub(now))
	e.Details = map[string]any{"daily_limit": limit, "resets_at": resets.Format(time.RFC3339)}
	return e
}

// Idempotency keys.

// replay answers a send whose key was already used within the TTL: the first
// answer when the request is the same, 422 idempotency_key_reused when it is
// not. found is false when the key is unused or expired. It reads in tx, or
// on a pool connection when tx is nil.
func (s *Service) replay(ctx context.Context, tx pgx.Tx, t db.Tenant, key string, fp []byte, now time.Time) (SendResult, bool, error) {
	var (
		found     bool
		hash      []byte
		status    *int
		body      []byte
		createdAt time.Time
	)
	err := s.prep.Query(ctx, tx, `SELECT request_hash, status_code, response_body, created_at
		FROM `+t.Table("idempotency_keys")+` WHERE key = $1`, []any{key}, func(r db.Rows) error {
		if !r.Next() {
			return nil
		}
		found = true
		return r.Scan(&hash, &status, &body, &createdAt)
	})
	if err != nil {
		return SendResult{}, false, fmt.Errorf("read idempotency key: %w", err)
	}
	if !found || !createdAt.After(now.Add(-s.cfg.IdempotencyTTL)) {
		return SendResult{}, false, nil
	}
	if !bytes.Equal(hash, fp) {
		return SendResult{}, true, apperr.Invalid(CodeIdempotencyKeyReused,
			"This Idempotency-Key was already used with a different request. Use a new key for a new message.")
	}
	if status == nil {
		return SendResult{}, true, fmt.Errorf("idempotency key %q has no stored answer", key)
	}
	var parsed struct {
		Data struct {
			ID int64 `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &parsed); err != nil {
		return SendResult{}, true, fmt.Errorf("stored answer of idempotency key: %w", err)
	}
	resource, ok := resourceOf(body)
	if !ok || *status != storedStatus {
		return SendResult{}, true, fmt.Errorf("idempotency key %q has an answer of another form (%d)", key, *status)
	}
	return SendResult{MessageID: parsed.Data.ID, Resource: resource, Replayed: true}, true, nil
}

// claimKey records key for this send as the transaction's first write. A key
// held by a send in progress makes this statement wait until that send
// commits or rolls back; a key older than expired is taken over. It reports
// false when the key belongs to another live send (read its answer).
func (s *Service) claimKey(ctx context.Context, tx pgx.Tx, t db.Tenant, key string, fp []byte, now, expired time.Time) (bool, error) {
	claimed := false
	err := s.prep.Query(ctx, tx, `INSERT INTO `+t.Table("idempotency_keys")+` AS k (key, request_hash, created_at)
		VALUES ($1, $2, $3)
		ON CONFLICT (key) DO UPDATE
		   SET request_hash = EXCLUDED.request_hash, status_code = NULL, response_body = NULL,
		       created_at = EXCLUDED.created_at
		 WHERE k.created_at <= $4
		RETURNING k.key`, []any{key, fp, now, expired}, func(r db.Rows) error {
		claimed = r.Next()
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("claim idempotency key: %w", err)
	}
	return claimed, nil
}

// storeAnswer keeps the answer under the key for replays.
func (s *Service) storeAnswer(ctx context.Context, tx pgx.Tx, t db.Tenant, key string, res SendResult) error {
	if err := s.prep.Exec(ctx, tx, `UPDATE `+t.Table("idempotency_keys")+`
		SET status_code = $1, response_body = $2 WHERE key = $3`, storedStatus, storedBody(res.Resource), key); err != nil {
		return fmt.Errorf("store idempotency answer: %w", err)
	}
	return nil
}

// PurgeIdempotencyKeys deletes the keys of tenant t created before before,
// and reports how many went.
func PurgeIdempotencyKeys(ctx context.Context, d *db.DB, t db.Tenant, before time.Time) (int64, error) {
	tag, err := d.Pool.Exec(ctx, `DELETE FROM `+t.Table("idempotency_keys")+` WHERE created_at < $1`, before)
	if err != nil {
		return 0, fmt.Errorf("purge idempotency keys of %s: %w", t.Schema, err)
	}
	return tag.RowsAffected(), nil
}
