package central

import (
	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/resource"
	"github.com/bizmsg/platform/platform/usage"
)

// MountMessaging registers the dashboard's reads of the organization's
// messages and usage on g, the authenticated group Mount returns. Every
// member may read them; they are the Tenant API's GET /messages,
// GET /messages/{id} and GET /usage, the same handlers over the same
// services:
//
//	GET /messages       200 {"data": [...], "next_cursor": ...}
//	GET /messages/{id}  200 {"data": message}
//	GET /usage          200 {"data": report}
func MountMessaging(g gin.IRoutes, msgs *messages.Service, u *usage.Service) {
	m := resource.Messages{Svc: msgs, Caller: caller}
	g.GET("/messages", m.List)
	g.GET("/messages/:id", m.Get)
	g.GET("/usage", resource.Usage{Svc: u, Caller: caller}.Report)
}
