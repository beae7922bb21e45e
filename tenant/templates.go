package tenant

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/templates"
)

// templateHandlers serves the Tenant API's template routes.
type templateHandlers struct {
	svc *templates.Service
}

// MountTemplates registers the template routes on g, the authenticated
// group Mount returns (docs/api.md, §Templates):
//
//	POST   /templates        templates.manage                201 {"data": template}
//	GET    /templates        messages.send or messages.read  200 {"data": [...], "next_cursor": ...}
//	GET    /templates/{id}   messages.send or messages.read  200 {"data": template}
//	DELETE /templates/{id}   templates.manage                204
func MountTemplates(g gin.IRoutes, svc *templates.Service) {
	h := &templateHandlers{svc: svc}
	manage := RequireScope(apikey.ScopeTemplatesManage)
	read := RequireAnyScope(apikey.ScopeMessagesSend, apikey.ScopeMessagesRead)
	g.POST("/templates", manage, h.create)
	g.GET("/templates", read, h.list)
	g.GET("/templates/:id", read, oneByID("template", http.StatusOK, svc.Get))
	g.DELETE("/templates/:id", manage, deleteByID("template", svc.Delete))
}

// create is POST /templates: 201 with the template, pending review.
func (h *templateHandlers) create(c *gin.Context) {
	var in templates.Input
	if !httpx.Bind(c, &in) {
		return
	}
	tpl, err := h.svc.Create(c.Request.Context(), MustPrincipal(c).Tenant, in)
	httpx.Data(c, http.StatusCreated, tpl, err)
}

// list is GET /templates[?status=&category=&name=&limit=&cursor=]: the
// organization's templates, newest first.
func (h *templateHandlers) list(c *gin.Context) {
	page, err := h.svc.List(c.Request.Context(), MustPrincipal(c).Tenant, templates.ListQuery{
		Status: c.Query("status"), Category: c.Query("category"), Name: c.Query("name"),
		Limit: c.Query("limit"), Cursor: c.Query("cursor"),
	})
	httpx.Reply(c, http.StatusOK, page, err)
}
