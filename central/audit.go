package central

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/audit"
	"github.com/bizmsg/platform/platform/httpx"
)

// auditHandlers serves the organization's audit log.
type auditHandlers struct {
	svc *audit.Service
}

// MountAudit registers the audit log's read on g, the authenticated group
// Mount returns, for owners and admins (others get 403 insufficient_role):
//
//	GET /audit-log  200 {"data": [entry...], "next_cursor": ...}
//
// with the filters actor, action, target, since and until, and limit and
// cursor (docs/api.md, §Audit log).
func MountAudit(g gin.IRoutes, svc *audit.Service) {
	h := &auditHandlers{svc: svc}
	g.GET("/audit-log", RequireRole(accounts.RoleOwner, accounts.RoleAdmin), h.list)
}

func (h *auditHandlers) list(c *gin.Context) {
	p := MustPrincipal(c)
	page, err := h.svc.List(c.Request.Context(), p.OrgID, audit.QueryFrom(c.Request.URL.Query()))
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.JSON(c, http.StatusOK, page)
}
