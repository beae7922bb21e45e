package messages

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/uptrace/bun"

	"github.com/bizmsg/platform/jobs"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/lookup"
	"github.com/bizmsg/platform/platform/senders"
)

// SendResult is the answer to an accepted send.
type SendResult struct {
	// Status is the HTTP status of the answer (202).
	Status int
	// Body is the answer's body, {"data": <message>}. A replay returns the
	// first answer's bytes unchanged.
	Body []byte
	// MessageID is the accepted message's id.
	MessageID int64
	// Replayed reports that the answer is an earlier send's under the same
	// Idempotency-Key: nothing was sent this time.
	Replayed bool
}

// Send validates req and, if the sender may send to the recipient today,
// accepts the message: it is stored as queued with its delivery job in one
// transaction (see the package comment). Errors: 422 validation_failed with
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
		if res, found, err := s.replay(ctx, s.db, t, key, fp, now); err != nil || found {
			return res, err
		}
	}

	// Checks that need the network, outside the transaction. The state is
	// checked again under the row lock below.
	sn, err := s.senders.Resolve(ctx, t, d.Sender.ref())
	if err != nil {
		return SendResult{}, err
	}
	if err := senders.CheckSendable(sn); err != nil {
		return SendResult{}, err
	}
	reach, err := lookup.Check(ctx, s.net, d.ToPhone, sn.Phone)
	if err != nil {
		return SendResult{}, err
	}
	if !reach.CanReceive {
		return SendResult{}, errUnreachable(reach.ReasonCode)
	}

	var res SendResult
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if key != "" {
			claimed, err := claimKey(ctx, tx, t, key, fp, now, now.Add(-s.cfg.IdempotencyTTL))
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
		}
		locked, err := s.senders.LoadForSend(ctx, tx, t, d.Sender.ref())
		if err != nil {
			return err
		}
		if err := senders.CheckSendable(locked); err != nil {
			return err
		}
		r := &row{
			SenderNumberID:  locked.ID,
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
			CreatedAt:       now,
			UpdatedAt:       now,
		}
		if err := insertRow(ctx, tx, t, r); err != nil {
			return err
		}
		if _, err := s.jobs.InsertTx(ctx, tx.Tx, jobs.DeliverArgs{OrgID: t.OrgID, Schema: t.Schema, MessageID: r.ID}, nil); err != nil {
			return fmt.Errorf("queue delivery of message %d: %w", r.ID, err)
		}
		body, err := json.Marshal(struct {
			Data Message `json:"data"`
		}{r.message()})
		if err != nil {
			return fmt.Errorf("render message %d: %w", r.ID, err)
		}
		res = SendResult{Status: http.StatusAccepted, Body: body, MessageID: r.ID}
		if key != "" {
			if err := storeAnswer(ctx, tx, t, key, res); err != nil {
				return err
			}
		}
		// The daily-limit reservation comes last: its row lock on the
		// sender's day serializes that sender's sends until the commit, so
		// the lock is held for one statement and the commit, not for the
		// inserts above. A refusal rolls all of them back.
		ok, err := reserveDaily(ctx, tx, t, locked.ID, locked.DailyLimitOverride, dayOf(now))
		if err != nil {
			return err
		}
		if !ok {
			return s.errDailyLimit(ctx, tx, t, locked, now)
		}
		return nil
	})
	if errors.Is(err, errReplayed) {
		return res, nil
	}
	if err != nil {
		return SendResult{}, err
	}
	return res, nil
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

// errDailyLimit is the 429 for a sender that used its allowance for today.
func (s *Service) errDailyLimit(ctx context.Context, idb bun.IDB, t db.Tenant, sn senders.Sender, now time.Time) error {
	org, err := loadOrgSettings(ctx, idb, t.OrgID)
	if err != nil {
		return err
	}
	limit := sn.DailyLimit(org.DefaultDailyLimit)
	resets := nextMidnight(now)
	e := apperr.RateLimited(CodeDailyLimitExceeded,
		fmt.Sprintf("The sender number has reached its daily limit of %d messages. The limit resets at %s.",
			limit, resets.Format(time.RFC3339)),
		resets.Sub(now))
	e.Details = map[string]any{"daily_limit": limit, "resets_at": resets.Format(time.RFC3339)}
	return e
}

// Idempotency keys.

// keyRecord is a stored idempotency key.
type keyRecord struct {
	RequestHash  []byte    `bun:"request_hash"`
	StatusCode   *int      `bun:"status_code"`
	ResponseBody []byte    `bun:"response_body"`
	CreatedAt    time.Time `bun:"created_at"`
}

// replay answers a send whose key was already used within the TTL: the first
// answer when the request is the same, 422 idempotency_key_reused when it is
// not. found is false when the key is unused or expired.
func (s *Service) replay(ctx context.Context, idb bun.IDB, t db.Tenant, key string, fp []byte, now time.Time) (SendResult, bool, error) {
	var k keyRecord
	err := idb.NewRaw(`SELECT request_hash, status_code, response_body, created_at
		FROM ?.idempotency_keys WHERE key = ?`, t.Ident(), key).Scan(ctx, &k)
	if errors.Is(err, sql.ErrNoRows) {
		return SendResult{}, false, nil
	}
	if err != nil {
		return SendResult{}, false, fmt.Errorf("read idempotency key: %w", err)
	}
	if !k.CreatedAt.After(now.Add(-s.cfg.IdempotencyTTL)) {
		return SendResult{}, false, nil
	}
	if !bytes.Equal(k.RequestHash, fp) {
		return SendResult{}, true, apperr.Invalid(CodeIdempotencyKeyReused,
			"This Idempotency-Key was already used with a different request. Use a new key for a new message.")
	}
	if k.StatusCode == nil {
		return SendResult{}, true, fmt.Errorf("idempotency key %q has no stored answer", key)
	}
	var parsed struct {
		Data struct {
			ID int64 `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(k.ResponseBody, &parsed); err != nil {
		return SendResult{}, true, fmt.Errorf("stored answer of idempotency key: %w", err)
	}
	return SendResult{Status: *k.StatusCode, Body: k.ResponseBody, MessageID: parsed.Data.ID, Replayed: true}, true, nil
}

// claimKey records key for this send as the transaction's first write. A key
// held by a send in progress makes this statement wait until that send
// commits or rolls back; a key older than expired is taken over. It reports
// false when the key belongs to another live send (read its answer).
func claimKey(ctx context.Context, tx bun.Tx, t db.Tenant, key string, fp []byte, now, expired time.Time) (bool, error) {
	var got string
	err := tx.NewRaw(`INSERT INTO ?.idempotency_keys AS k (key, request_hash, created_at) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE
		   SET request_hash = EXCLUDED.request_hash, status_code = NULL, response_body = NULL,
		       created_at = EXCLUDED.created_at
		 WHERE k.created_at <= ?
		RETURNING k.key`, t.Ident(), key, fp, now, expired).Scan(ctx, &got)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("claim idempotency key: %w", err)
	}
	return true, nil
}

// storeAnswer keeps the answer under the key for replays.
func storeAnswer(ctx context.Context, tx bun.Tx, t db.Tenant, key string, res SendResult) error {
	if _, err := tx.NewRaw(`UPDATE ?.idempotency_keys SET status_code = ?, response_body = ? WHERE key = ?`,
		t.Ident(), res.Status, res.Body, key).Exec(ctx); err != nil {
		return fmt.Errorf("store idempotency answer: %w", err)
	}
	return nil
}

// PurgeIdempotencyKeys deletes the keys of tenant t created before before,
// and reports how many went.
func PurgeIdempotencyKeys(ctx context.Context, idb bun.IDB, t db.Tenant, before time.Time) (int64, error) {
	res, err := idb.NewRaw(`DELETE FROM ?.idempotency_keys WHERE created_at < ?`, t.Ident(), before).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("purge idempotency keys of %s: %w", t.Schema, err)
	}
	return res.RowsAffected()
}
