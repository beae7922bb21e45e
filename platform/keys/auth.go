package keys

import (
	"context"
	"fmt"

	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/apperr"
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
	Org Organization
}

// authQuery finds a key by its prefix (unique index) with its organization:
// the only query on the authentication path.
const authQuery = `
	SELECT ` + keyColumns + `, k.key_hash,
	       o.name, o.schema_name, o.subscription_status, o.default_daily_limit, o.created_at,
	       o.api_rate_limit, o.api_rate_burst
	FROM central.api_keys k JOIN central.organizations o ON o.id = k.organization_id
	WHERE k.prefix = $1`

// Authenticate checks a presented API key. A malformed key (wrong marker,
// length, alphabet or checksum) is refused before any database work. Otherwise
// one indexed query finds the key and its organization; the keyed hash is
// compared in constant time, then revocation and expiry are checked against
// the clock. Every failure is a 401 apperr. On success last_used_at is written
// if it is older than the touch interval (at most one write per key per
// interval, however many nodes serve the key).
func (s *Service) Authenticate(ctx context.Context, plain string) (*Auth, error) {
	prefix, err := apikey.Parse(plain)
	if err != nil {
		return nil, invalidKey()
	}
	var (
		a      Auth
		hash   []byte
		schema *string
	)
	err = scanKey(s.pool.QueryRow(ctx, authQuery, prefix), &a.Key, &hash,
		&a.Org.Name, &schema, &a.Org.SubscriptionStatus, &a.Org.DefaultDailyLimit, &a.Org.CreatedAt,
		&a.Org.APIRateLimit, &a.Org.APIRateBurst)
	if isNoRows(err) {
		// Spend a hash comparison anyway, so an unknown prefix costs the same
		// as a wrong key.
		s.cfg.Hasher.Verify(plain, make([]byte, 32))
		return nil, invalidKey()
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate api key: %w", err)
	}
	if !s.cfg.Hasher.Verify(plain, hash) {
		return nil, invalidKey()
	}
	now := s.cfg.Clock.Now()
	switch a.Key.Status(now) {
	case StatusRevoked:
		return nil, apperr.New(apperr.KindUnauthenticated, CodeRevokedKey, "This API key has been revoked.")
	case StatusExpired:
		return nil, apperr.New(apperr.KindUnauthenticated, CodeExpiredKey, "This API key has expired.")
	}
	a.Org.ID = a.Key.OrgID
	a.Org.CreatedAt = Timestamp(a.Org.CreatedAt)
	if schema == nil {
		return nil, fmt.Errorf("authenticate api key: organization %d has no tenant schema", a.Org.ID)
	}
	if a.Org.Tenant, err = db.NewTenant(a.Org.ID, *schema); err != nil {
		return nil, fmt.Errorf("authenticate api key: %w", err)
	}
	s.touch(ctx, &a.Key)
	return &a, nil
}

func invalidKey() error {
	return apperr.New(apperr.KindUnauthenticated, CodeInvalidKey, "The API key is invalid.")
}

// touch writes last_used_at when the value read is older than the touch
// interval. The UPDATE repeats the staleness condition, so concurrent
// requests (on any node) that all read a stale value write it once. A failed
// write is logged and does not fail the request.
func (s *Service) touch(ctx context.Context, k *Key) {
	now := s.cfg.Clock.Now()
	staleBefore := now.Add(-s.cfg.TouchInterval)
	if k.LastUsedAt != nil && k.LastUsedAt.After(staleBefore) {
		return
	}
	tag, err := s.pool.Exec(ctx, `UPDATE central.api_keys SET last_used_at = $2
		WHERE id = $1 AND (last_used_at IS NULL OR last_used_at <= $3)`, k.ID, now, staleBefore)
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "api key last_used_at write failed", "api_key_id", k.ID, "error", err)
		return
	}
	if tag.RowsAffected() > 0 {
		s.lastUsedWrites.Add(1)
		k.LastUsedAt = &now
	}
}
