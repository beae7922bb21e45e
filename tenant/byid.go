package tenant

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/httpx"
)

// oneByID is the handler of a route on one of the organization's things
// (named thing in a 404) by its {id}: do's answer, with status, as
// {"data": ...}, or do's error.
func oneByID[T any](thing string, status int, do func(context.Context, db.Tenant, int64) (T, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, ok := httpx.PathIDOr404(c, thing)
		if !ok {
			return
		}
		v, err := do(c.Request.Context(), MustPrincipal(c).Tenant, id)
		httpx.Data(c, status, v, err)
	}
}

// deleteByID is the handler of DELETE on one of the organization's things
// by its {id}: 204 once del removed it, or del's error.
func deleteByID(thing string, del func(context.Context, db.Tenant, int64) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, ok := httpx.PathIDOr404(c, thing)
		if !ok {
			return
		}
		if err := del(c.Request.Context(), MustPrincipal(c).Tenant, id); err != nil {
			httpx.Fail(c, err)
			return
		}
		c.Status(http.StatusNoContent)
	}
}
