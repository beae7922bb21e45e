// Package central is the Central API (/api/v1/central, Authorization:
// Bearer): registration, login and tokens, the signed-in user's context and
// the organization's members (over platform/accounts), and the
// dashboard-facing management of API keys, sender numbers, messages, usage
// and the audit log (over the shared handlers of platform/resource). It is
// HTTP only: the one bearer middleware, role checks and thin handlers.
package central

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/keys"
	"github.com/bizmsg/platform/platform/page"
	"github.com/bizmsg/platform/platform/resource"
)

// BasePath is where the Central API lives.
const BasePath = "/api/v1/central"

// API is the Central API's HTTP layer: thin handlers over the accounts.Service and
// the shared keys service.
type API struct {
	svc  *accounts.Service
	keys *keys.Service
}

// Config configures an API.
type Config struct {
	// Accounts is registration, login, tokens and members. Required.
	Accounts *accounts.Service
	// Keys is the API-key service the dashboard manages keys through.
	// Required.
	Keys *keys.Service
}

// New validates cfg and returns the Central API.
func New(cfg Config) (*API, error) {
	switch {
	case cfg.Accounts == nil:
		return nil, errors.New("central: Config.Accounts is required")
	case cfg.Keys == nil:
		return nil, errors.New("central: Config.Keys is required")
	}
	return &API{svc: cfg.Accounts, keys: cfg.Keys}, nil
}

// Mount registers the Central API under BasePath on r and returns the
// authenticated group: every route added to it runs behind the bearer
// middleware (MustPrincipal gives the caller); routes that change the
// organization add RequireRole(accounts.RoleOwner, accounts.RoleAdmin).
func (a *API) Mount(r gin.IRouter) *gin.RouterGroup {
	public := r.Group(BasePath)
	public.POST("/register", a.register)
	public.POST("/login", a.login)
	public.POST("/token/refresh", a.refresh)

	admin := RequireRole(accounts.RoleOwner, accounts.RoleAdmin)
	g := r.Group(BasePath, a.bearer)
	g.POST("/logout", a.logout)
	g.GET("/me", a.me)
	g.GET("/users", a.listMembers)
	g.POST("/users", admin, a.addMember)
	g.DELETE("/users/:id", admin, a.removeMember)
	k := resource.Keys{Svc: a.keys, Caller: caller}
	g.GET("/api-keys", k.List)
	g.POST("/api-keys", admin, k.Create)
	g.DELETE("/api-keys/:id", admin, k.Revoke)
	g.POST("/api-keys/:id/reveal", admin, k.Reveal)
	return g
}

// register is POST /register: 201 {user, organization, access_token, ...}.
func (a *API) register(c *gin.Context) {
	var req accounts.Registration
	if !httpx.Bind(c, &req) {
		return
	}
	out, err := a.svc.Register(c.Request.Context(), req)
	httpx.ReplySecret(c, http.StatusCreated, out, err)
}

// login is POST /login: 200 {access_token, token_type, expires_in, refresh_token}.
func (a *API) login(c *gin.Context) {
	var req accounts.Credentials
	if !httpx.Bind(c, &req) {
		return
	}
	sess, err := a.svc.Login(c.Request.Context(), req, c.ClientIP())
	httpx.ReplySecret(c, http.StatusOK, sess, err)
}

// refreshRequest is the body of POST /token/refresh and POST /logout.
type refreshRequest struct {
	RefreshToken string `json:"refresh_token"`
}

// refresh is POST /token/refresh: rotates the refresh token.
func (a *API) refresh(c *gin.Context) {
	var req refreshRequest
	if !httpx.Bind(c, &req) {
		return
	}
	if req.RefreshToken == "" {
		var v apperr.Validation
		v.Add("refresh_token", "is required")
		httpx.Fail(c, v.Err())
		return
	}
	sess, err := a.svc.Refresh(c.Request.Context(), req.RefreshToken)
	httpx.ReplySecret(c, http.StatusOK, sess, err)
}

// logout is POST /logout: 204. The body {"refresh_token": ...} is optional;
// without it every session of the caller ends.
func (a *API) logout(c *gin.Context) {
	p := MustPrincipal(c)
	var req refreshRequest
	if c.Request.ContentLength != 0 || c.GetHeader("Content-Type") != "" {
		if !httpx.Bind(c, &req) {
			return
		}
	}
	if err := a.svc.Logout(c.Request.Context(), *p, req.RefreshToken); err != nil {
		httpx.Fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// me is GET /me: {"data": {user, organization, role, subscription}}.
func (a *API) me(c *gin.Context) {
	me, err := a.svc.Me(c.Request.Context(), *MustPrincipal(c))
	httpx.Data(c, http.StatusOK, me, err)
}

// listMembers is GET /users: the organization's members, newest first.
func (a *API) listMembers(c *gin.Context) {
	p := MustPrincipal(c)
	pg, err := page.Parse(c.Query("limit"), c.Query("cursor"))
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	users, next, err := a.svc.Members(c.Request.Context(), p.OrgID, pg)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.JSON(c, http.StatusOK, page.Of[accounts.User]{Items: users, NextCursor: next})
}

// addMember is POST /users: 201 {"data": member}.
func (a *API) addMember(c *gin.Context) {
	var req accounts.NewMember
	if !httpx.Bind(c, &req) {
		return
	}
	u, err := a.svc.AddMember(c.Request.Context(), *MustPrincipal(c), req)
	httpx.Data(c, http.StatusCreated, u, err)
}

// removeMember is DELETE /users/{id}: 204.
func (a *API) removeMember(c *gin.Context) {
	id, ok := httpx.PathIDOr404(c, "member")
	if !ok {
		return
	}
	if err := a.svc.RemoveMember(c.Request.Context(), *MustPrincipal(c), id); err != nil {
		httpx.Fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
