package tenant

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/usage"
)

// MountUsage registers the usage report on g, the authenticated group Mount
// returns:
//
//	GET /usage[?from=YYYY-MM-DD&to=YYYY-MM-DD]  usage.read  200 {"data": report}
func MountUsage(g gin.IRoutes, svc *usage.Service) {
	g.GET("/usage", RequireScope(apikey.ScopeUsageRead), func(c *gin.Context) {
		p := MustPrincipal(c)
		r, err := svc.Report(c.Request.Context(), p.Tenant, usage.Query{From: c.Query("from"), To: c.Query("to")})
		if err != nil {
			httpx.Fail(c, err)
			return
		}
		httpx.JSON(c, http.StatusOK, gin.H{"data": r})
	})
}
