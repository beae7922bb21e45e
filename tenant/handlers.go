package tenant

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/keys"
	"github.com/bizmsg/platform/platform/page"
)

// keyList is the body of GET /api-keys.
type keyList struct {
	Data       []keys.Resource `json:"data"`
	NextCursor *string         `json:"next_cursor"`
}

// actor is the calling key as the keys service sees it: bound by its scopes.
func actor(p *Principal) keys.Actor {
	return keys.Actor{UserID: p.UserID, KeyID: p.KeyID, Scopes: p.Scopes}
}

// createKey is POST /api-keys: 201 with the key resource, plain_text_key
// included (the only time it is shown).
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
	created, err := a.keys.Create(c.Request.Context(), p.OrgID, actor(p), spec)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	// The plain key is in this response: keep it out of caches.
	c.Header("Cache-Control", "no-store")
	httpx.JSON(c, http.StatusCreated, created.Resource(a.keys.Now()))
}

// listKeys is GET /api-keys: the organization's keys, newest first, never
// with plain_text_key.
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

// revokeKey is DELETE /api-keys/{id}: 204, effective at once.
func (a *API) revokeKey(c *gin.Context) {
	p := MustPrincipal(c)
	id, ok := httpx.PathID(c)
	if !ok {
		httpx.Fail(c, apperr.NotFound("API key"))
		return
	}
	if err := a.keys.Revoke(c.Request.Context(), p.OrgID, actor(p), id); err != nil {
		httpx.Fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// meBody is GET /me's data.
type meBody struct {
	User         *accounts.User        `json:"user"`
	APIKey       keys.Resource         `json:"api_key"`
	Organization accounts.Organization `json:"organization"`
	Subscription accounts.Subscription `json:"subscription"`
}

// me is GET /me: the tenant context of the calling key. user is the user the
// key acts for (its creator), null when unknown or no longer a member.
func (a *API) me(c *gin.Context) {
	p := MustPrincipal(c)
	user, err := a.keys.Member(c.Request.Context(), p.OrgID, p.UserID)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.JSON(c, http.StatusOK, gin.H{"data": meBody{
		User:         user,
		APIKey:       p.Key.Resource(a.keys.Now()),
		Organization: p.Organization,
		Subscription: p.Organization.Subscription(),
	}})
}
