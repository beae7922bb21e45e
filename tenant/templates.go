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
	g.GET("/templates/:id", read, h.get)
	g.DELETE("/templates/:id", manage, h.delete)
}

// templateID reads the {id} path parameter; false has answered 404.
func templateID(c *gin.Context) (int64, bool) { return httpx.PathIDOr404(c, "template") }

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

// get is GET /templates/{id}.
func (h *templateHandlers) get(c *gin.Context) {
	id, ok := templateID(c)
	if !ok {
		return
	}
	tpl, err := h.svc.Get(c.Request.Context(), MustPrincipal(c).Tenant, id)
	httpx.Data(c, http.StatusOK, tpl, err)
}

// delete is DELETE /templates/{id}: 204. Messages sent with the template
// keep their content.
func (h *templateHandlers) delete(c *gin.Context) {
	id, ok := templateID(c)
	if !ok {
		return
	}
	if err := h.svc.Delete(c.Request.Context(), MustPrincipal(c).Tenant, id); err != nil {
		httpx.Fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
