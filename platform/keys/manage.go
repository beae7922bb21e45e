package keys

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/audit"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/page"
	"github.com/bizmsg/platform/platform/sqlq"
)

// List returns one page of organization orgID's keys, newest first, and the
// cursor of the next page ("" on the last page). Keys of every status are
// listed; the plain value is never part of a listing.
func (s *Service) List(ctx context.Context, orgID int64, pg page.Query) ([]Key, string, error) {
	var rows []keyRow
	sel := selectKeys(s.db.Bun, &rows).Where("k.organization_id = ?", orgID).OrderExpr("k.id DESC").Limit(int64(pg.Limit + 1))
	if pg.After != 0 {
		sel.Where("k.id < ?", pg.After)
	}
	if err := sel.Scan(ctx); err != nil {
		return nil, "", fmt.Errorf("list api keys: %w", err)
	}
	out := make([]Key, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.key())
	}
	out, next := page.Cut(pg, out, func(k Key) int64 { return k.ID })
	return out, next, nil
}

// Get returns key id of organization orgID (404 if it is not one of its keys).
func (s *Service) Get(ctx context.Context, orgID, id int64) (Key, error) {
	var r keyRow
	err := selectKeys(s.db.Bun, &r).Where("k.id = ?", id).Where("k.organization_id = ?", orgID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Key{}, errNotFound()
	}
	if err != nil {
		return Key{}, fmt.Errorf("get api key: %w", err)
	}
	return r.key(), nil
}

// Revoke revokes key id of organization orgID, effective immediately on every
// node. A key of another organization is 404. A restricted actor may only
// revoke keys whose scopes it covers (403 insufficient_scope). Revoking a
// revoked key changes nothing and succeeds; a revoked key never becomes
// active again.
func (s *Service) Revoke(ctx context.Context, orgID int64, actor Actor, id int64) error {
	now := clock.Stamp(s.cfg.Clock.Now())
	err := s.db.RunInTx(ctx, func(tx db.Tx) error {
		var r keyRow
		err := selectKeys(tx.Bun, &r).Where("k.id = ?", id).Where("k.organization_id = ?", orgID).For("UPDATE").Scan(ctx)
		k := r.key()
		if errors.Is(err, sql.ErrNoRows) {
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
		r.RevokedAt = &now
		if _, err := tx.Bun.NewUpdate().Model(&r).Column("revoked_at").WherePK().Exec(ctx); err != nil {
			return fmt.Errorf("revoke api key: %w", err)
		}
		return record(ctx, tx.Pgx(), orgID, actor, audit.ActionAPIKeyRevoke, k, now)
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
	err := s.db.RunInTx(ctx, func(tx db.Tx) error {
		var r keyRow
		err := selectKeys(tx.Bun, &r).Column("key_sealed").Where("k.id = ?", id).Where("k.organization_id = ?", orgID).Scan(ctx)
		k, sealed := r.key(), r.KeySealed
		if errors.Is(err, sql.ErrNoRows) {
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
		if err := record(ctx, tx.Pgx(), orgID, Actor{UserID: userID}, audit.ActionAPIKeyReveal, k, now); err != nil {
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
	err := s.q.Raw(s.db.Bun, "member", sqlq.Args{"org_id": orgID, "user_id": userID}).Scan(ctx, &u)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load member %d: %w", userID, err)
	}
	u.CreatedAt = clock.Stamp(u.CreatedAt)
	return &u, nil
}
