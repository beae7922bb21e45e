package resource

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/keys"
	"github.com/bizmsg/platform/platform/page"
)

// Keys serves /api-keys: create, list, revoke and (dashboard only) reveal.
// Who may do what is the API's to check before these handlers (scopes,
// roles) and the keys service's (a key never grants more than it holds).
type Keys struct {
	Svc    *keys.Service
	Caller CallerFunc
}

// Create is POST /api-keys: 201 with the key resource and its
// plain_text_key (shown this once, kept out of caches).
func (h Keys) Create(c *gin.Context) {
	var req keys.CreateRequest
	if !httpx.Bind(c, &req) {
		return
	}
	spec, err := req.Spec()
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	who := h.Caller(c)
	created, err := h.Svc.Create(c.Request.Context(), who.OrgID, who.Actor, spec)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.NoStore(c)
	httpx.JSON(c, http.StatusCreated, created.Resource(h.Svc.Now()))
}

// List is GET /api-keys: the organization's keys, newest first, never with
// plain_text_key.
func (h Keys) List(c *gin.Context) {
	pg, err := page.Parse(c.Query("limit"), c.Query("cursor"))
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	list, next, err := h.Svc.List(c.Request.Context(), h.Caller(c).OrgID, pg)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	now := h.Svc.Now()
	out := page.Of[keys.Resource]{Items: make([]keys.Resource, 0, len(list)), NextCursor: next}
	for _, k := range list {
		out.Items = append(out.Items, k.Resource(now))
	}
	httpx.JSON(c, http.StatusOK, out)
}

// Revoke is DELETE /api-keys/{id}: 204, effective at once.
func (h Keys) Revoke(c *gin.Context) {
	id, ok := httpx.PathIDOr404(c, "API key")
	if !ok {
		return
	}
	who := h.Caller(c)
	if err := h.Svc.Revoke(c.Request.Context(), who.OrgID, who.Actor, id); err != nil {
		httpx.Fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// Reveal is POST /api-keys/{id}/reveal: 200 with the key resource and its
// plain_text_key, recorded in the audit log. Needs encrypted storage, and a
// signed-in user (a key cannot reveal keys).
func (h Keys) Reveal(c *gin.Context) {
	id, ok := httpx.PathIDOr404(c, "API key")
	if !ok {
		return
	}
	who := h.Caller(c)
	if who.Actor.UserID == 0 {
		httpx.Fail(c, apperr.Forbidden("user_required", "Only a signed-in user may reveal an API key."))
		return
	}
	out, err := h.Svc.Reveal(c.Request.Context(), who.OrgID, who.Actor.UserID, id)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.NoStore(c)
	httpx.JSON(c, http.StatusOK, out.Resource(h.Svc.Now()))
}
