// Package central is the Central API's HTTP layer (/api/v1/central, Bearer
// tokens): registration, login, members, and the dashboard-facing management
// of API keys, sender numbers, the message history, usage and the audit log,
// as thin handlers over the business services.
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
)

// BasePath is where the Central API lives.
const BasePath = "/api/v1/central"

// API is the Central API's HTTP layer: thin handlers over the accounts.Service and
// the shared keys service.
type API struct {
	svc  *accounts.Service
	keys *keys.Service
}

// NewAPI returns the Central API over svc and the API-key service.
func NewAPI(svc *accounts.Service, keySvc *keys.Service) (*API, error) {
	if svc == nil || keySvc == nil {
		return nil, errors.New("central: the service and the keys service are required")
	}
	return &API{svc: svc, keys: keySvc}, nil
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
	g.GET("/api-keys", a.listKeys)
	g.POST("/api-keys", admin, a.createKey)
	g.DELETE("/api-keys/:id", admin, a.revokeKey)
	g.POST("/api-keys/:id/reveal", admin, a.revealKey)
	return g
}

// register is POST /register: 201 {user, organization, access_token, ...}.
func (a *API) register(c *gin.Context) {
	var req accounts.Registration
	if err := httpx.BindJSON(c, &req); err != nil {
		httpx.Fail(c, err)
		return
	}
	out, err := a.svc.Register(c.Request.Context(), req)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	noStore(c)
	httpx.JSON(c, http.StatusCreated, out)
}

// login is POST /login: 200 {access_token, token_type, expires_in, refresh_token}.
func (a *API) login(c *gin.Context) {
	var req accounts.Credentials
	if err := httpx.BindJSON(c, &req); err != nil {
		httpx.Fail(c, err)
		return
	}
	sess, err := a.svc.Login(c.Request.Context(), req, c.ClientIP())
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	noStore(c)
	httpx.JSON(c, http.StatusOK, sess)
}

// refreshRequest is the body of POST /token/refresh and POST /logout.
type refreshRequest struct {
	RefreshToken string `json:"refresh_token"`
}

// refresh is POST /token/refresh: rotates the refresh token.
func (a *API) refresh(c *gin.Context) {
	var req refreshRequest
	if err := httpx.BindJSON(c, &req); err != nil {
		httpx.Fail(c, err)
		return
	}
	if req.RefreshToken == "" {
		var v apperr.Validation
		v.Add("refresh_token", "is required")
		httpx.Fail(c, v.Err())
		return
	}
	sess, err := a.svc.Refresh(c.Request.Context(), req.RefreshToken)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	noStore(c)
	httpx.JSON(c, http.StatusOK, sess)
}

// logout is POST /logout: 204. The body {"refresh_token": ...} is optional;
// without it every session of the caller ends.
func (a *API) logout(c *gin.Context) {
	p := MustPrincipal(c)
	var req refreshRequest
	if c.Request.ContentLength != 0 || c.GetHeader("Content-Type") != "" {
		if err := httpx.BindJSON(c, &req); err != nil {
			httpx.Fail(c, err)
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
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.JSON(c, http.StatusOK, gin.H{"data": me})
}

// memberList is the body of GET /users.
type memberList struct {
	Data       []accounts.User `json:"data"`
	NextCursor *string         `json:"next_cursor"`
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
	if users == nil {
		users = []accounts.User{}
	}
	httpx.JSON(c, http.StatusOK, memberList{Data: users, NextCursor: page.NextCursor(next)})
}

// addMember is POST /users: 201 {"data": member}.
func (a *API) addMember(c *gin.Context) {
	var req accounts.NewMember
	if err := httpx.BindJSON(c, &req); err != nil {
		httpx.Fail(c, err)
		return
	}
	u, err := a.svc.AddMember(c.Request.Context(), *MustPrincipal(c), req)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.JSON(c, http.StatusCreated, gin.H{"data": u})
}

// removeMember is DELETE /users/{id}: 204.
func (a *API) removeMember(c *gin.Context) {
	id, ok := httpx.PathID(c)
	if !ok {
		httpx.Fail(c, apperr.NotFound("member"))
		return
	}
	if err := a.svc.RemoveMember(c.Request.Context(), *MustPrincipal(c), id); err != nil {
		httpx.Fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// keyList is the body of GET /api-keys.
type keyList struct {
	Data       []keys.Resource `json:"data"`
	NextCursor *string         `json:"next_cursor"`
}

// listKeys is GET /api-keys: the organization's keys, newest first, never
// with plain_text_key. Any member may list.
func (a *API) listKeys(c *gin.Context) {
	p := MustPrincipal(c)
	pg, err := page.Parse(c.Query("limit"), c.Query("cursor"))
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	list, next, err := a.keys.List(c.Request.Context(), p.OrgID, pg)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	now := a.keys.Now()
	out := keyList{Data: make([]keys.Resource, 0, len(list)), NextCursor: page.NextCursor(next)}
	for _, k := range list {
		out.Data = append(out.Data, k.Resource(now))
	}
	httpx.JSON(c, http.StatusOK, out)
}

// createKey is POST /api-keys: 201 with the key resource and its
// plain_text_key (shown this once). Owners and admins may grant any scope.
func (a *API) createKey(c *gin.Context) {
	p := MustPrincipal(c)
	var req keys.CreateRequest
	if err := httpx.BindJSON(c, &req); err != nil {
		httpx.Fail(c, err)
		return
	}
	spec, err := req.Spec()
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	created, err := a.keys.Create(c.Request.Context(), p.OrgID, keys.Actor{UserID: p.UserID}, spec)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	noStore(c)
	httpx.JSON(c, http.StatusCreated, created.Resource(a.keys.Now()))
}

// revokeKey is DELETE /api-keys/{id}: 204, effective at once.
func (a *API) revokeKey(c *gin.Context) {
	p := MustPrincipal(c)
	id, ok := httpx.PathID(c)
	if !ok {
		httpx.Fail(c, apperr.NotFound("API key"))
		return
	}
	if err := a.keys.Revoke(c.Request.Context(), p.OrgID, keys.Actor{UserID: p.UserID}, id); err != nil {
		httpx.Fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// revealKey is POST /api-keys/{id}/reveal: 200 with the key resource and
// its plain_text_key, recorded in the audit log. Needs encrypted storage.
func (a *API) revealKey(c *gin.Context) {
	p := MustPrincipal(c)
	id, ok := httpx.PathID(c)
	if !ok {
		httpx.Fail(c, apperr.NotFound("API key"))
		return
	}
	out, err := a.keys.Reveal(c.Request.Context(), p.OrgID, p.UserID, id)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	noStore(c)
	httpx.JSON(c, http.StatusOK, out.Resource(a.keys.Now()))
}

// noStore keeps responses that carry secrets (tokens, plain keys) out of
// caches.
func noStore(c *gin.Context) { c.Header("Cache-Control", "no-store") }
