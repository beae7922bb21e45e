package central

import (
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/keys"
	"github.com/bizmsg/platform/platform/resource"
)

// MaxAuthorizationBytes caps the Authorization header; our access tokens are
// a few hundred bytes, so anything much larger is refused unparsed.
const MaxAuthorizationBytes = 2048

// principal keeps the authenticated accounts.Principal on the request.
const principal httpx.PrincipalKey[accounts.Principal] = "central.principal"

// PrincipalFrom returns the request's Principal, set by the bearer
// middleware; false on a route mounted outside the authenticated group.
func PrincipalFrom(c *gin.Context) (*accounts.Principal, bool) { return principal.From(c) }

// MustPrincipal returns the request's Principal and panics when there is
// none (a handler mounted outside the authenticated group: a programming
// error, answered 500 by the recovery middleware).
func MustPrincipal(c *gin.Context) *accounts.Principal { return principal.Must(c) }

// caller is the signed-in user as the shared resource handlers see it.
func caller(c *gin.Context) resource.Caller {
	p := MustPrincipal(c)
	return resource.Caller{OrgID: p.OrgID, Tenant: p.Tenant, Actor: keys.Actor{UserID: p.UserID}, Admin: p.IsAdmin()}
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
		httpx.Fail(c, accounts.ErrInvalidToken())
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
	principal.Set(c, p)
	c.Next()
}

// RequireRole is route middleware admitting users whose role in the
// organization is one of roles; others get 403 insufficient_role.
func RequireRole(roles ...string) gin.HandlerFunc {
	roles = slices.Clone(roles)
	return principal.Gate(func(p *accounts.Principal) error {
		if slices.Contains(roles, p.Role) {
			return nil
		}
		e := apperr.Forbidden("insufficient_role", "This action needs the role "+strings.Join(roles, " or ")+"; you are "+p.Role+".")
		e.Details = map[string]any{"required_roles": roles}
		return e
	})
}
