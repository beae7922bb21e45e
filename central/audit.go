package central

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/audit"
	"github.com/bizmsg/platform/platform/httpx"
)

// MountAudit registers the audit log's read on g, the authenticated group
// Mount returns, for owners and admins (others get 403 insufficient_role):
//
//	GET /audit-log  200 {"data": [entry...], "next_cursor": ...}
//
// with the filters actor, action, target, since and until, and limit and
// cursor (docs/api.md, §Audit log).
func MountAudit(g gin.IRoutes, svc *audit.Service) {
	g.GET("/audit-log", RequireRole(accounts.RoleOwner, accounts.RoleAdmin), func(c *gin.Context) {
		page, err := svc.List(c.Request.Context(), MustPrincipal(c).OrgID, audit.QueryFrom(c.Request.URL.Query()))
		httpx.Reply(c, http.StatusOK, page, err)
	})
}
