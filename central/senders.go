package central

import (
	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/resource"
	"github.com/bizmsg/platform/platform/senders"
)

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
