package central

import (
	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/keys"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/resource"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/usage"
)

// caller is the signed-in user as the shared resource handlers see it.
func caller(c *gin.Context) resource.Caller {
	p := MustPrincipal(c)
	return resource.Caller{OrgID: p.OrgID, Tenant: p.Tenant, Actor: keys.Actor{UserID: p.UserID}, Admin: p.IsAdmin()}
}

// MountSenders registers the dashboard's sender-number routes on g, the
// authenticated group Mount returns. Every member of the organization may use
// them; only owners and admins may change daily_limit_override (the service
// answers 403 insufficient_role to a member who tries):
//
//	GET   /sender-numbers                 200 {"data": [...]}
//	POST  /sender-numbers                 201 {"data": sender}
//	GET   /sender-numbers/{id}            200 {"data": sender}
//	PATCH /sender-numbers/{id}            200 {"data": sender}  display_name, daily_limit_override
//	POST  /sender-numbers/{id}/verify     200 {"data": sender}  {"otp": "123456"}
//	POST  /sender-numbers/{id}/resend-otp 200 {"data": sender}
func MountSenders(g gin.IRoutes, svc *senders.Service) {
	h := resource.Senders{Svc: svc, Caller: caller}
	g.GET("/sender-numbers", h.List)
	g.POST("/sender-numbers", h.Register)
	g.GET("/sender-numbers/:id", h.Get)
	g.PATCH("/sender-numbers/:id", h.Update)
	g.POST("/sender-numbers/:id/verify", h.Verify)
	g.POST("/sender-numbers/:id/resend-otp", h.ResendOTP)
}

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
