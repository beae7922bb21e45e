package central

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/usage"
)

// messagingHandlers serves the dashboard's message history and usage.
type messagingHandlers struct {
	messages *messages.Service
	usage    *usage.Service
}

// MountMessaging registers the dashboard's reads of the organization's
// messages and usage on g, the authenticated group Mount returns. Every
// member may read them; they are the Tenant API's GET /messages,
// GET /messages/{id} and GET /usage over the same services, with the same
// parameters and bodies:
//
//	GET /messages       200 {"data": [...], "next_cursor": ...}
//	GET /messages/{id}  200 {"data": message}
//	GET /usage          200 {"data": report}
func MountMessaging(g gin.IRoutes, msgs *messages.Service, u *usage.Service) {
	h := &messagingHandlers{messages: msgs, usage: u}
	g.GET("/messages", h.list)
	g.GET("/messages/:id", h.get)
	g.GET("/usage", h.report)
}

func (h *messagingHandlers) list(c *gin.Context) {
	p := MustPrincipal(c)
	page, err := h.messages.List(c.Request.Context(), p.Tenant, messages.ListQueryFrom(c.Request.URL.Query()))
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.JSON(c, http.StatusOK, page)
}

func (h *messagingHandlers) get(c *gin.Context) {
	p := MustPrincipal(c)
	id, ok := httpx.PathID(c)
	if !ok {
		httpx.Fail(c, apperr.NotFound("message"))
		return
	}
	m, err := h.messages.Get(c.Request.Context(), p.Tenant, id)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.JSON(c, http.StatusOK, gin.H{"data": m})
}

func (h *messagingHandlers) report(c *gin.Context) {
	p := MustPrincipal(c)
	r, err := h.usage.Report(c.Request.Context(), p.Tenant, usage.Query{From: c.Query("from"), To: c.Query("to")})
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.JSON(c, http.StatusOK, gin.H{"data": r})
}
