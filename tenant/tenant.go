// Package tenant is the Tenant API (/api/v1, authenticated with X-Api-Key):
// the one API-key middleware, per-route scope checks, and the handlers for
// API keys and /me. Other packages mount their tenant handlers (sender
// numbers, messages, lookup, usage) on the authenticated group Mount returns,
// with RequireScope or RequireAnyScope, and read the caller with
// PrincipalFrom.
//
//	g := tenantAPI.Mount(engine)
//	g.POST("/sender-numbers", tenant.RequireScope(apikey.ScopeMessagesSend), h.create)
//	...
//	func (h *handlers) create(c *gin.Context) {
//		p := tenant.MustPrincipal(c)
//		sender, err := h.svc.Register(c, p.Tenant, ...)
//	}
package tenant

import (
	"errors"
	"log/slog"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/keys"
	"github.com/bizmsg/platform/platform/ratelimit"
	"github.com/bizmsg/platform/platform/resource"
)

// BasePath is where the Tenant API lives.
const BasePath = "/api/v1"

// APIKeyHeader carries the API key.
const APIKeyHeader = "X-Api-Key" //nolint:gosec // G101: a header name, not a credential

// CodeInsufficientScope is the error code of a 403 for a missing scope.
const CodeInsufficientScope = "insufficient_scope"

// principal keeps the authenticated Principal on the request.
const principal httpx.PrincipalKey[Principal] = "tenant.principal"

// Principal is the authenticated caller of a Tenant API request: an API key
// of one organization. Tenant holds that organization's schema; every tenant
// query of the request goes through it.
type Principal struct {
	// KeyID is the presented key's id.
	KeyID int64
	// OrgID is the key's organization.
	OrgID int64
	// UserID is the user the key acts for (its creator); 0 when unknown.
	UserID int64
	// Tenant routes queries to the organization's schema.
	Tenant db.Tenant
	// Scopes are the key's scopes.
	Scopes []string
	// Key is the key's stored record.
	Key keys.Key
	// Organization is the key's organization as read at authentication.
	Organization accounts.Organization
	// User is the user the key acts for as a member of the organization,
	// read at authentication; nil when unknown or no longer a member.
	User *accounts.User
	// rate is the request's rate decision made at authentication (a keys
	// service with Config.Pace); nil: the API's Limiter decides.
	rate *ratelimit.Decision
}

// Can reports whether the key holds scope (directly or through "*").
func (p *Principal) Can(scope string) bool { return apikey.Covers(p.Scopes, scope) }

// PrincipalFrom returns the request's Principal, set by the API-key
// middleware; false on a route mounted outside the authenticated group.
func PrincipalFrom(c *gin.Context) (*Principal, bool) { return principal.From(c) }

// MustPrincipal returns the request's Principal and panics when there is
// none (a handler mounted outside the authenticated group: a programming
// error, answered 500 by the recovery middleware).
func MustPrincipal(c *gin.Context) *Principal { return principal.Must(c) }

// caller is the calling key as the shared resource handlers see it: bound
// by its scopes, never an admin of limits.
func caller(c *gin.Context) resource.Caller {
	p := MustPrincipal(c)
	return resource.Caller{
		OrgID:  p.OrgID,
		Tenant: p.Tenant,
		Actor:  keys.Actor{UserID: p.UserID, KeyID: p.KeyID, Scopes: p.Scopes},
	}
}

// Config configures the Tenant API.
type Config struct {
	// Keys is the API-key service. Required.
	Keys *keys.Service
	// Logger receives handler failures that are not the client's. Default
	// slog.Default().
	Logger *slog.Logger
	// Limiter limits each key's request rate (API_RATE_LIMIT,
	// API_RATE_BURST, or the organization's own) in a step of its own. Nil:
	// the rate Keys decides while it authenticates (keys.Config.Pace: the
	// service's shared limit, no round trip of its own), else none. Not
	// with a Keys that decides rates.
	Limiter ratelimit.Limiter
	// RateLimit is the Limiter's default limit per key when the
	// organization has none.
	RateLimit ratelimit.Limit
}

// API is the Tenant API's key middleware and handlers.
type API struct {
	keys        *keys.Service
	log         *slog.Logger
	limiter     ratelimit.Limiter
	rateDefault ratelimit.Limit
}

// New returns the Tenant API.
func New(cfg Config) (*API, error) {
	if cfg.Keys == nil {
		return nil, errors.New("tenant: a keys service is required")
	}
	if cfg.Limiter != nil && cfg.Keys.DecidesRates() {
		return nil, errors.New("tenant: Config.Limiter with a keys service that decides rates would limit twice")
	}
	defaults.Logger(&cfg.Logger)
	return &API{keys: cfg.Keys, log: cfg.Logger, limiter: cfg.Limiter, rateDefault: cfg.RateLimit}, nil
}

// Mount registers the Tenant API under BasePath on r and returns the
// authenticated group: every route added to it runs behind the API-key
// middleware and the key's request-rate limit. Routes needing a scope add
// RequireScope or RequireAnyScope.
func (a *API) Mount(r gin.IRouter) *gin.RouterGroup {
	g := r.Group(BasePath, a.Authenticate, a.rateLimit)
	k := resource.Keys{Svc: a.keys, Caller: caller}
	g.POST("/api-keys", k.Create)
	g.GET("/api-keys", k.List)
	g.DELETE("/api-keys/:id", k.Revoke)
	g.GET("/me", a.me)
	return g
}

// Authenticate is the one API-key middleware: it authenticates X-Api-Key
// (malformed keys are refused before any database work; expired, revoked,
// missing or wrong keys get 401), and attaches the Principal with the
// organization's tenant to the request. Bearer tokens are not accepted here.
func (a *API) Authenticate(c *gin.Context) {
	raw := c.GetHeader(APIKeyHeader)
	if raw == "" {
		msg := "An API key is required in the X-Api-Key header."
		if c.GetHeader("Authorization") != "" {
			msg = "The Tenant API authenticates with the X-Api-Key header; bearer tokens are not accepted."
		}
		httpx.Fail(c, apperr.New(apperr.KindUnauthenticated, "missing_api_key", msg))
		return
	}
	auth, err := a.keys.Authenticate(c.Request.Context(), raw)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	principal.Set(c, &Principal{
		KeyID:        auth.Key.ID,
		OrgID:        auth.Org.ID,
		UserID:       auth.Key.CreatedBy,
		Tenant:       auth.Org.Tenant,
		Scopes:       auth.Key.Scopes,
		Key:          auth.Key,
		Organization: auth.Org,
		User:         auth.Member,
		rate:         auth.Rate,
	})
	c.Next()
}

// RequireScope is route middleware admitting keys that hold scope (or "*");
// others get 403 insufficient_scope naming the scope.
func RequireScope(scope string) gin.HandlerFunc {
	return RequireAnyScope(scope)
}

// RequireAnyScope is route middleware admitting keys that hold at least one
// of scopes (or "*"); others get 403 insufficient_scope naming them.
func RequireAnyScope(scopes ...string) gin.HandlerFunc {
	scopes = slices.Clone(scopes)
	return principal.Gate(func(p *Principal) error {
		if slices.ContainsFunc(scopes, p.Can) {
			return nil
		}
		return errInsufficientScope(scopes)
	})
}

func errInsufficientScope(scopes []string) *apperr.Error {
	var msg string
	if len(scopes) == 1 {
		msg = "This API key lacks the " + scopes[0] + " scope required for this operation."
	} else {
		msg = "This API key lacks the scope required for this operation: one of " + strings.Join(scopes, ", ") + "."
	}
	e := apperr.Forbidden(CodeInsufficientScope, msg)
	e.Details = map[string]any{"required_scopes": scopes}
	return e
}
