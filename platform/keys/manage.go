package keys

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/audit"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/page"
)

// keyColumns are the columns scanKey reads, in order.
const keyColumns = `k.id, k.organization_id, coalesce(k.created_by_user_id, 0), k.name, k.prefix, k.scopes,
	k.expires_at, k.revoked_at, k.last_used_at, k.created_at, k.key_sealed IS NOT NULL`

func scanKey(row pgx.Row, k *Key, extra ...any) error {
	return row.Scan(keyFields(k, extra...)...)
}

// keyFields are the scan destinations of keyColumns into k, then extra.
func keyFields(k *Key, extra ...any) []any {
	return append([]any{&k.ID, &k.OrgID, &k.CreatedBy, &k.Name, &k.Prefix, &k.Scopes,
		&k.ExpiresAt, &k.RevokedAt, &k.LastUsedAt, &k.CreatedAt, &k.Sealed}, extra...)
}

// List returns one page of organization orgID's keys, newest first, and the
// cursor of the next page ("" on the last page). Keys of every status are
// listed; the plain value is never part of a listing.
func (s *Service) List(ctx context.Context, orgID int64, pg page.Query) ([]Key, string, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+keyColumns+`
		FROM central.api_keys k
		WHERE k.organization_id = $1 AND ($2::bigint = 0 OR k.id < $2)
		ORDER BY k.id DESC
		LIMIT $3`, orgID, pg.After, pg.Limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("list api keys: %w", err)
	}
	defer rows.Close()
	var out []Key
	for rows.Next() {
		var k Key
		if err := scanKey(rows, &k); err != nil {
			return nil, "", fmt.Errorf("scan api key: %w", err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list api keys: %w", err)
	}
	out, next := page.Cut(pg, out, func(k Key) int64 { return k.ID })
	return out, next, nil
}

// Get returns key id of organization orgID (404 if it is not one of its keys).
func (s *Service) Get(ctx context.Context, orgID, id int64) (Key, error) {
	var k Key
	err := scanKey(s.pool.QueryRow(ctx, `SELECT `+keyColumns+` FROM central.api_keys k WHERE k.id = $1 AND k.organization_id = $2`, id, orgID), &k)
	if isNoRows(err) {
		return Key{}, errNotFound()
	}
	if err != nil {
		return Key{}, fmt.Errorf("get api key: %w", err)
	}
	return k, nil
}

// Revoke revokes key id of organization orgID, effective immediately on every
// node. A key of another organization is 404. A restricted actor may only
// revoke keys whose scopes it covers (403 insufficient_scope). Revoking a
// revoked key changes nothing and succeeds; a revoked key never becomes
// active again.
func (s *Service) Revoke(ctx context.Context, orgID int64, actor Actor, id int64) error {
	now := clock.Stamp(s.cfg.Clock.Now())
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var k Key
		err := scanKey(tx.QueryRow(ctx, `SELECT `+keyColumns+` FROM central.api_keys k
			WHERE k.id = $1 AND k.organization_id = $2 FOR UPDATE`, id, orgID), &k)
		if isNoRows(err) {
			return errNotFound()
		}
		if err != nil {
			return fmt.Errorf("load api key: %w", err)
		}
		if actor.restricted() {
			if missing := missingScopes(k.Scopes, actor.Scopes); len(missing) > 0 {
				return insufficientScope("An API key can only revoke keys whose scopes it holds itself.", missing)
			}
		}
		if k.RevokedAt != nil {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE central.api_keys SET revoked_at = $2 WHERE id = $1`, id, now); err != nil {
			return fmt.Errorf("revoke api key: %w", err)
		}
		return record(ctx, tx, orgID, actor, audit.ActionAPIKeyRevoke, k, now)
	})
	if _, ok := apperr.As(err); ok {
		return err
	}
	if err != nil {
		return fmt.Errorf("revoke api key %d: %w", id, err)
	}
	return nil
}

// Reveal returns the plain value of active key id of organization orgID from
// its encrypted copy, and records the reveal (with userID as the actor) in the
// audit log before returning it. It needs encrypted storage (422
// reveal_unavailable without it, or for a key created before it was enabled).
func (s *Service) Reveal(ctx context.Context, orgID, userID, id int64) (*Created, error) {
	if s.cfg.Sealer == nil {
		return nil, apperr.Invalid("reveal_unavailable",
			"Showing a key again needs encrypted key storage (API_KEY_ENCRYPTION_KEY), which is not configured.")
	}
	now := clock.Stamp(s.cfg.Clock.Now())
	var out *Created
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var (
			k      Key
			sealed []byte
		)
		err := scanKey(tx.QueryRow(ctx, `SELECT `+keyColumns+`, k.key_sealed FROM central.api_keys k
			WHERE k.id = $1 AND k.organization_id = $2`, id, orgID), &k, &sealed)
		if isNoRows(err) {
			return errNotFound()
		}
		if err != nil {
			return fmt.Errorf("load api key: %w", err)
		}
		if st := k.Status(now); st != StatusActive {
			return apperr.Invalid("api_key_not_active", "Only an active key can be shown; this key is "+st+".")
		}
		if sealed == nil {
			return apperr.Invalid("reveal_unavailable",
				"This key was created before encrypted key storage was enabled and cannot be shown again.")
		}
		plain, err := s.cfg.Sealer.Open(sealed, []byte(k.Prefix))
		if err != nil {
			return fmt.Errorf("open sealed key %d: %w", k.ID, err)
		}
		if p, err := apikey.Parse(plain); err != nil || p != k.Prefix {
			return fmt.Errorf("sealed key %d does not match its prefix", k.ID)
		}
		if err := record(ctx, tx, orgID, Actor{UserID: userID}, audit.ActionAPIKeyReveal, k, now); err != nil {
			return err
		}
		out = &Created{Key: k, Plain: plain}
		return nil
	})
	if _, ok := apperr.As(err); ok {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("reveal api key %d: %w", id, err)
	}
	return out, nil
}

// Member returns user userID as a member of organization orgID, or nil when
// the user is unknown or no longer a member.
func (s *Service) Member(ctx context.Context, orgID, userID int64) (*accounts.User, error) {
	if userID <= 0 {
		return nil, nil
	}
	var u accounts.User
	err := s.pool.QueryRow(ctx, `
		SELECT u.id, u.name, u.email, m.role, u.created_at
		FROM central.memberships m JOIN central.users u ON u.id = m.user_id
		WHERE m.organization_id = $1 AND m.user_id = $2`, orgID, userID,
	).Scan(&u.ID, &u.Name, &u.Email, &u.Role, &u.CreatedAt)
	if isNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load member %d: %w", userID, err)
	}
	u.CreatedAt = clock.Stamp(u.CreatedAt)
	return &u, nil
}
