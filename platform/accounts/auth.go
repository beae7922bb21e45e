package accounts

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/sqlq"
	"github.com/bizmsg/platform/platform/token"
)

// Principal is the signed-in user of a Central API request, with the role
// read from the database on this request (so a removed member or a changed
// role takes effect at once, not when the token expires).
type Principal struct {
	UserID int64
	OrgID  int64
	Role   string
	// Tenant routes queries to the organization's schema.
	Tenant db.Tenant
}

// IsAdmin reports whether the role may change the organization (owner or admin).
func (p *Principal) IsAdmin() bool { return p.Role == RoleOwner || p.Role == RoleAdmin }

// SigningKeys returns the token keys for the current JWT secret and, when
// set, the previous one (still verifying during a rotation). Each kid is
// derived from its secret, so every node configured with the same secrets
// agrees on the kids without further configuration.
func SigningKeys(current, previous []byte) []token.Key {
	out := []token.Key{{ID: KeyID(current), Secret: current}}
	if len(previous) > 0 {
		out = append(out, token.Key{ID: KeyID(previous), Secret: previous})
	}
	return out
}

// KeyID returns the kid of a JWT secret: a short, non-reversible digest.
func KeyID(secret []byte) string {
	sum := sha256.Sum256(append([]byte("bizmsg-jwt-kid:"), secret...))
	return "k" + hex.EncodeToString(sum[:6])
}

// ErrInvalidToken is the one 401 for any access token that fails.
func ErrInvalidToken() *apperr.Error {
	return apperr.New(apperr.KindUnauthenticated, "invalid_token", "The access token is invalid or expired.")
}

// Authenticate verifies an access token (signature, algorithm, kid, exp, iss,
// aud through platform/token) and loads the user's current membership.
func (s *Service) Authenticate(ctx context.Context, accessToken string) (*Principal, error) {
	claims, err := s.cfg.Issuer.Verify(accessToken)
	if err != nil {
		e := ErrInvalidToken()
		e.Err = err
		return nil, e
	}
	p := Principal{UserID: claims.UserID, OrgID: claims.OrgID}
	var row struct {
		Role       string  `bun:"role"`
		SchemaName *string `bun:"schema_name"`
	}
	err = s.q.Raw(s.db.Bun, "authenticate", sqlq.Args{"org_id": p.OrgID, "user_id": p.UserID}).Scan(ctx, &row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrInvalidToken()
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	p.Role = row.Role
	if p.Tenant, err = db.StoredTenant(p.OrgID, row.SchemaName); err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	return &p, nil
}
