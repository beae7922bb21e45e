// Package idempotency keeps the answers of sends made with an
// Idempotency-Key (docs/api.md, §Idempotency): a key is claimed as its
// send's transaction's first write, so concurrent repeats of one key queue
// on its unique index, the answer is stored under it in that transaction,
// and a repeat within the TTL replays it byte for byte; the same key with
// another request is refused.
//
// The answer stored is the doors' answer to the send, as the tenant's
// idempotency_keys table has always held it: the status 202 and the body
// {"data": <resource>}, so that a key stored by one version replays in
// another.
package idempotency

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/sqlq"
)

//go:embed queries/*.sql
var queries embed.FS

// Config configures a Store.
type Config struct {
	// Prepared runs the statements (kept prepared per connection).
	// Required.
	Prepared *db.Prepared
	// TTL is how long a key's answer is replayed. Required.
	TTL time.Duration
}

// Store claims keys, stores their answers and replays them.
type Store struct {
	prep *db.Prepared
	q    *sqlq.Queries
	ttl  time.Duration
}

// New checks cfg and returns a Store.
func New(cfg Config) (*Store, error) {
	switch {
	case cfg.Prepared == nil:
		return nil, errors.New("idempotency: Config.Prepared is required")
	case cfg.TTL <= 0:
		return nil, errors.New("idempotency: Config.TTL is required")
	}
	q, err := sqlq.Load(queries, "queries")
	if err != nil {
		return nil, fmt.Errorf("idempotency: %w", err)
	}
	return &Store{prep: cfg.Prepared, q: q, ttl: cfg.TTL}, nil
}

// Answer is a send's stored answer: its message's id and resource (the
// bytes the send answered with).
type Answer struct {
	MessageID int64
	Resource  json.RawMessage
}

// storedStatus, storedPrefix and storedSuffix are the stored answer's
// form (the package comment): Body writes it, resourceOf reads it back.
const (
	storedStatus = 202
	storedPrefix = `{"data":`
	storedSuffix = `}`
)

// Body is the body stored for an accepted send's resource.
func Body(resource []byte) []byte {
	b := make([]byte, 0, len(storedPrefix)+len(resource)+len(storedSuffix))
	b = append(b, storedPrefix...)
	b = append(b, resource...)
	return append(b, storedSuffix...)
}

// resourceOf is the resource of a stored body (Body), unchanged.
func resourceOf(body []byte) ([]byte, bool) {
	if !bytes.HasPrefix(body, []byte(storedPrefix)) || !bytes.HasSuffix(body, []byte(storedSuffix)) ||
		len(body) < len(storedPrefix)+len(storedSuffix)+1 {
		return nil, false
	}
	return body[len(storedPrefix) : len(body)-len(storedSuffix)], true
}

// run runs named query name of tenant t with args in tx (nil: on a pool
// connection), handing its rows to scan (nil: none).
func (s *Store) run(ctx context.Context, tx pgx.Tx, t db.Tenant, name string, args sqlq.Args, scan func(db.Rows) error) error {
	return s.prep.Named(ctx, tx, s.q, name, t.Quoted(), args, scan)
}

// Replay answers a send whose key was already used within the TTL: the
// first answer when its request's fingerprint fp is the same, 422
// idempotency_key_reused when it is not. found is false when the key is
// unused or expired at now. It reads in tx, or on a pool connection when
// tx is nil.
func (s *Store) Replay(ctx context.Context, tx pgx.Tx, t db.Tenant, key string, fp []byte, now time.Time) (Answer, bool, error) {
	var (
		found     bool
		hash      []byte
		status    *int
		body      []byte
		createdAt time.Time
	)
	err := s.run(ctx, tx, t, "read", sqlq.Args{"key": key}, func(r db.Rows) error {
		if !r.Next() {
			return nil
		}
		found = true
		return r.Scan(&hash, &status, &body, &createdAt)
	})
	if err != nil {
		return Answer{}, false, fmt.Errorf("read idempotency key: %w", err)
	}
	if !found || !createdAt.After(now.Add(-s.ttl)) {
		return Answer{}, false, nil
	}
	if !bytes.Equal(hash, fp) {
		return Answer{}, true, apperr.Invalid(messages.CodeIdempotencyKeyReused,
			"This Idempotency-Key was already used with a different request. Use a new key for a new message.")
	}
	if status == nil {
		return Answer{}, true, fmt.Errorf("idempotency key %q has no stored answer", key)
	}
	var parsed struct {
		Data struct {
			ID int64 `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &parsed); err != nil {
		return Answer{}, true, fmt.Errorf("stored answer of idempotency key: %w", err)
	}
	resource, ok := resourceOf(body)
	if !ok || *status != storedStatus {
		return Answer{}, true, fmt.Errorf("idempotency key %q has an answer of another form (%d)", key, *status)
	}
	return Answer{MessageID: parsed.Data.ID, Resource: resource}, true, nil
}

// Claim records key (request fingerprint fp, at now) for a send as tx's
// first write. A key held by a send in progress makes it wait until that
// send commits or rolls back; a key past the TTL is taken over. It reports
// false when the key belongs to another live send (Replay its answer).
func (s *Store) Claim(ctx context.Context, tx pgx.Tx, t db.Tenant, key string, fp []byte, now time.Time) (bool, error) {
	claimed := false
	err := s.run(ctx, tx, t, "claim", sqlq.Args{"key": key, "hash": fp, "now": now, "expired": now.Add(-s.ttl)},
		func(r db.Rows) error {
			claimed = r.Next()
			return nil
		})
	if err != nil {
		return false, fmt.Errorf("claim idempotency key: %w", err)
	}
	return claimed, nil
}

// Save keeps the answer (the accepted message's resource) under key in
// tx, for replays.
func (s *Store) Save(ctx context.Context, tx pgx.Tx, t db.Tenant, key string, resource []byte) error {
	args := sqlq.Args{"status": storedStatus, "body": Body(resource), "key": key}
	if err := s.run(ctx, tx, t, "save", args, nil); err != nil {
		return fmt.Errorf("store idempotency answer: %w", err)
	}
	return nil
}

// Purge deletes the keys of tenant t claimed before before, and reports
// how many went.
func Purge(ctx context.Context, d *db.DB, t db.Tenant, before time.Time) (int64, error) {
	q, err := sqlq.Load(queries, "queries")
	if err != nil {
		return 0, err
	}
	tag, err := db.ExecNamed(ctx, d.Pool, q, "purge", t.Quoted(), sqlq.Args{"before": before})
	if err != nil {
		return 0, fmt.Errorf("purge idempotency keys of %s: %w", t.Schema, err)
	}
	return tag.RowsAffected(), nil
}
