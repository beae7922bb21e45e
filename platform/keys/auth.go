package keys

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
)

// Authentication failure codes. Expired and revoked are told apart only once
// the presented key has proven genuine, so only its holder learns them.
const (
	CodeInvalidKey = "invalid_api_key"
	CodeExpiredKey = "api_key_expired"
	CodeRevokedKey = "api_key_revoked"
)

// Auth is an authenticated API key and the organization it belongs to.
type Auth struct {
	Key Key
	Org accounts.Organization
}

// authQuery finds a key by its prefix (unique index) with its organization:
// the only query on the authentication path. The concurrent authentications
// of a process share one run (findKeys): authQuery + "= $1" for one key,
// authQuery + "= ANY($1::text[])" for several.
const authQuery = `
	SELECT ` + keyColumns + `, k.key_hash,
	       o.name, o.schema_name, o.subscription_status, o.default_daily_limit, o.created_at,
	       o.api_rate_limit, o.api_rate_burst
	FROM central.api_keys k JOIN central.organizations o ON o.id = k.organization_id
	WHERE k.prefix `

// storedKey is what authQuery reads of one key.
type storedKey struct {
	auth   Auth
	hash   []byte
	schema *string
}

// Authenticate checks a presented API key. A malformed key (wrong marker,
// length, alphabet or checksum) is refused before any database work. Otherwise
// one indexed query finds the key and its organization; the keyed hash is
// compared in constant time, then revocation and expiry are checked against
// the clock. Every failure is a 401 apperr. On success last_used_at is written
// if it is older than the touch interval (at most one write per key per
// interval, however many nodes serve the key).
//
// The query is shared by the authentications that wait while the process's
// reads of keys are all busy (Config.Batch): one statement for many
// requests, whatever their organizations. A read starts only after every
// call it serves arrived, so it sees every revocation committed before the
// request (docs/api.md, §API keys: revocation is immediate on every node).
func (s *Service) Authenticate(ctx context.Context, plain string) (*Auth, error) {
	prefix, err := apikey.Parse(plain)
	if err != nil {
		return nil, invalidKey()
	}
	found, err := s.finder.Do(ctx, struct{}{}, prefix)
	if err != nil {
		return nil, fmt.Errorf("authenticate api key: %w", err)
	}
	if found == nil {
		// Spend a hash comparison anyway, so an unknown prefix costs the same
		// as a wrong key.
		s.cfg.Hasher.Verify(plain, make([]byte, 32))
		return nil, invalidKey()
	}
	if !s.cfg.Hasher.Verify(plain, found.hash) {
		return nil, invalidKey()
	}
	a := found.auth
	a.Key.Scopes = slices.Clone(a.Key.Scopes) // callers of one key each own theirs
	now := s.cfg.Clock.Now()
	switch a.Key.Status(now) {
	case StatusRevoked:
		return nil, apperr.New(apperr.KindUnauthenticated, CodeRevokedKey, "This API key has been revoked.")
	case StatusExpired:
		return nil, apperr.New(apperr.KindUnauthenticated, CodeExpiredKey, "This API key has expired.")
	}
	a.Org.ID = a.Key.OrgID
	a.Org.CreatedAt = clock.Stamp(a.Org.CreatedAt)
	if a.Org.Tenant, err = db.StoredTenant(a.Org.ID, found.schema); err != nil {
		return nil, fmt.Errorf("authenticate api key: %w", err)
	}
	s.touch(ctx, &a.Key)
	return &a, nil
}

// findKeys reads the keys of prefixes (a batch.Batcher run) in one
// statement and returns each prefix's, or nil when no key has it. A run of
// one, what a process that is not busy runs, keeps the one-key statement:
// its plan is a plain index lookup.
func (s *Service) findKeys(ctx context.Context, _ struct{}, prefixes []string) ([]*storedKey, error) {
	query, arg := authQuery+"= ANY($1::text[])", any(prefixes)
	if len(prefixes) == 1 {
		query, arg = authQuery+"= $1", prefixes[0]
	}
	rows, err := s.pool.Query(ctx, query, arg)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byPrefix := make(map[string]*storedKey, len(prefixes))
	for rows.Next() {
		k := &storedKey{}
		a := &k.auth
		if err := scanKey(rows, &a.Key, &k.hash, &a.Org.Name, &k.schema, &a.Org.SubscriptionStatus,
			&a.Org.DefaultDailyLimit, &a.Org.CreatedAt, &a.Org.APIRateLimit, &a.Org.APIRateBurst); err != nil {
			return nil, err
		}
		byPrefix[a.Key.Prefix] = k
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]*storedKey, len(prefixes))
	for i, p := range prefixes {
		out[i] = byPrefix[p]
	}
	return out, nil
}

func invalidKey() error {
	return apperr.New(apperr.KindUnauthenticated, CodeInvalidKey, "The API key is invalid.")
}

// touch writes last_used_at when the value read is older than the touch
// interval. Concurrent touches share a statement (touchKeys), as the key
// reads do. A failed write is logged and does not fail the request.
func (s *Service) touch(ctx context.Context, k *Key) {
	if k.LastUsedAt != nil && k.LastUsedAt.After(s.cfg.Clock.Now().Add(-s.cfg.TouchInterval)) {
		return
	}
	at, err := s.toucher.Do(ctx, struct{}{}, k.ID)
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "api key last_used_at write failed", "api_key_id", k.ID, "error", err)
		return
	}
	if !at.IsZero() {
		k.LastUsedAt = &at
	}
}

// touchKeys writes last_used_at = now for the keys of ids (a batch.Batcher
// run) whose value is older than the touch interval, and returns for each
// id the time written, or the zero time when its row was not written. The
// staleness condition is in the UPDATE, so concurrent requests (on any
// node) that all read a stale value write it once. A run of one, what a
// process that is not busy runs, keeps the one-row statement. A run of
// several skips the rows another transaction holds (another node's touch,
// most likely) instead of waiting for them: rows locked in no set order by
// several runs could deadlock, and a key skipped now is written by its
// next request.
func (s *Service) touchKeys(ctx context.Context, _ struct{}, ids []int64) ([]time.Time, error) {
	now := s.cfg.Clock.Now()
	staleBefore := now.Add(-s.cfg.TouchInterval)
	out := make([]time.Time, len(ids))
	if len(ids) == 1 {
		tag, err := s.pool.Exec(ctx, `UPDATE central.api_keys SET last_used_at = $2
			WHERE id = $1 AND (last_used_at IS NULL OR last_used_at <= $3)`, ids[0], now, staleBefore)
		if err != nil {
			return nil, err
		}
		if tag.RowsAffected() > 0 {
			s.lastUsedWrites.Add(1)
			out[0] = now
		}
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `WITH due AS (
			SELECT id FROM central.api_keys
			 WHERE id = ANY ($1::bigint[]) AND (last_used_at IS NULL OR last_used_at <= $3)
			   FOR UPDATE SKIP LOCKED)
		UPDATE central.api_keys k SET last_used_at = $2 FROM due WHERE k.id = due.id
		RETURNING k.id`, ids, now, staleBefore)
	if err != nil {
		return nil, err
	}
	written, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	s.lastUsedWrites.Add(int64(len(written)))
	for i, id := range ids {
		if slices.Contains(written, id) {
			out[i] = now
		}
	}
	return out, nil
}
