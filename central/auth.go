package central

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/token"
)

// MaxAuthorizationBytes caps the Authorization header; our access tokens are
// a few hundred bytes, so anything much larger is refused unparsed.
const MaxAuthorizationBytes = 2048

// principalKey is the gin context key of the authenticated Principal.
const principalKey = "central.principal"

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

// PrincipalFrom returns the request's Principal, set by the bearer
// middleware; false on a route mounted outside the authenticated group.
func PrincipalFrom(c *gin.Context) (*Principal, bool) {
	v, ok := c.Get(principalKey)
	if !ok {
		return nil, false
	}
	p, ok := v.(*Principal)
	return p, ok
}

// MustPrincipal returns the request's Principal and panics when there is
// none (a handler mounted outside the authenticated group: a programming
// error, answered 500 by the recovery middleware).
func MustPrincipal(c *gin.Context) *Principal {
	p, ok := PrincipalFrom(c)
	if !ok {
		panic("central: no principal on the request; mount the handler on the group Mount returns")
	}
	return p
}

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

// errInvalidToken is the one 401 for any access token that fails.
func errInvalidToken() *apperr.Error {
	return apperr.New(apperr.KindUnauthenticated, "invalid_token", "The access token is invalid or expired.")
}

// Authenticate verifies an access token (signature, algorithm, kid, exp, iss,
// aud through platform/token) and loads the user's current membership.
func (s *Service) Authenticate(ctx context.Context, accessToken string) (*Principal, error) {
	claims, err := s.cfg.Issuer.Verify(accessToken)
	if err != nil {
		e := errInvalidToken()
		e.Err = err
		return nil, e
	}
	p := Principal{UserID: claims.UserID, OrgID: claims.OrgID}
	var schema *string
	err = s.pool.QueryRow(ctx, `
		SELECT m.role, o.schema_name
		FROM central.memberships m JOIN central.organizations o ON o.id = m.organization_id
		WHERE m.organization_id = $1 AND m.user_id = $2`, p.OrgID, p.UserID).Scan(&p.Role, &schema)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errInvalidToken()
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	if schema == nil {
		return nil, fmt.Errorf("authenticate: organization %d has no tenant schema", p.OrgID)
	}
	if p.Tenant, err = db.NewTenant(p.OrgID, *schema); err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	return &p, nil
}

// bearer is the Central API's authentication middleware: Authorization:
// Bearer <access token>, capped at MaxAuthorizationBytes. API keys are not
// accepted here.
func (a *API) bearer(c *gin.Context) {
	h := c.GetHeader("Authorization")
	if h == "" {
		msg := "A bearer token is required in the Authorization header."
		if c.GetHeader("X-Api-Key") != "" {
			msg = "The Central API authenticates with Authorization: Bearer; API keys are not accepted."
		}
		c.Header("WWW-Authenticate", `Bearer realm="central"`)
		httpx.Fail(c, apperr.New(apperr.KindUnauthenticated, "missing_token", msg))
		return
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if len(h) > MaxAuthorizationBytes || !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		c.Header("WWW-Authenticate", `Bearer realm="central", error="invalid_token"`)
		httpx.Fail(c, errInvalidToken())
		return
	}
	p, err := a.svc.Authenticate(c.Request.Context(), strings.TrimSpace(tok))
	if err != nil {
		if e, ok := apperr.As(err); ok && e.Kind == apperr.KindUnauthenticated {
			c.Header("WWW-Authenticate", `Bearer realm="central", error="invalid_token"`)
		}
		httpx.Fail(c, err)
		return
	}
	c.Set(principalKey, p)
	c.Next()
}

// RequireRole is route middleware admitting users whose role in the
// organization is one of roles; others get 403 insufficient_role.
func RequireRole(roles ...string) gin.HandlerFunc {
	roles = slices.Clone(roles)
	return func(c *gin.Context) {
		p, ok := PrincipalFrom(c)
		if !ok {
			httpx.Fail(c, errors.New("central: role check on a route without the bearer middleware"))
			return
		}
		if slices.Contains(roles, p.Role) {
			c.Next()
			return
		}
		e := apperr.Forbidden("insufficient_role", "This action needs the role "+strings.Join(roles, " or ")+"; you are "+p.Role+".")
		e.Details = map[string]any{"required_roles": roles}
		httpx.Fail(c, e)
	}
}
