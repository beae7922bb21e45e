package acceptance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"

	"github.com/bizmsg/platform/platform/messages"
)

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

// replay answers a send whose key was already used within the TTL: the first
// answer when the request is the same, 422 idempotency_key_reused when it is
// not. found is false when the key is unused or expired. It reads in tx, or
// on a pool connection when tx is nil.
func (s *Service) replay(ctx context.Context, tx pgx.Tx, t db.Tenant, key string, fp []byte, now time.Time) (Result, bool, error) {
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
		return Result{}, false, fmt.Errorf("read idempotency key: %w", err)
	}
	if !found || !createdAt.After(now.Add(-s.cfg.IdempotencyTTL)) {
		return Result{}, false, nil
	}
	if !bytes.Equal(hash, fp) {
		return Result{}, true, apperr.Invalid(messages.CodeIdempotencyKeyReused,
			"This Idempotency-Key was already used with a different request. Use a new key for a new message.")
	}
	if status == nil {
		return Result{}, true, fmt.Errorf("idempotency key %q has no stored answer", key)
	}
	var parsed struct {
		Data struct {
			ID int64 `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &parsed); err != nil {
		return Result{}, true, fmt.Errorf("stored answer of idempotency key: %w", err)
	}
	resource, ok := resourceOf(body)
	if !ok || *status != storedStatus {
		return Result{}, true, fmt.Errorf("idempotency key %q has an answer of another form (%d)", key, *status)
	}
	return Result{MessageID: parsed.Data.ID, Resource: resource, Replayed: true}, true, nil
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
func (s *Service) storeAnswer(ctx context.Context, tx pgx.Tx, t db.Tenant, key string, res Result) error {
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
