package tenant

import (
	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/resource"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/usage"
)

// MountSenders registers the sender-number routes on g, the authenticated
// group Mount returns:
//
//	POST /sender-numbers  messages.send                  201 {"data": sender}
//	GET  /sender-numbers  messages.send or messages.read 200 {"data": [...]}
//
// OTP entry, resend and limits are dashboard (Central API) operations.
func MountSenders(g gin.IRoutes, svc *senders.Service) {
	h := resource.Senders{Svc: svc, Caller: caller}
	g.POST("/sender-numbers", RequireScope(apikey.ScopeMessagesSend), h.Register)
	g.GET("/sender-numbers", RequireAnyScope(apikey.ScopeMessagesSend, apikey.ScopeMessagesRead), h.List)
}

// MountUsage registers the usage report on g, the authenticated group Mount
// returns:
//
//	GET /usage[?from=YYYY-MM-DD&to=YYYY-MM-DD]  usage.read  200 {"data": report}
func MountUsage(g gin.IRoutes, svc *usage.Service) {
	g.GET("/usage", RequireScope(apikey.ScopeUsageRead), resource.Usage{Svc: svc, Caller: caller}.Report)
}
