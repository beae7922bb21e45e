package tenant

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/acceptance"
	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/resource"
	"github.com/bizmsg/platform/platform/sendrequest"
)

// IdempotentReplayedHeader marks a send answered from its Idempotency-Key.
const IdempotentReplayedHeader = "Idempotent-Replayed"

// messageHandlers serves the Tenant API's message routes.
type messageHandlers struct {
	svc *acceptance.Service
}

// MountMessages registers the message routes on g, the authenticated group
// Mount returns:
//
//	POST /messages       messages.send  202 {"data": message}
//	GET  /messages       messages.read  200 {"data": [...], "next_cursor": ...}
//	GET  /messages/{id}  messages.read  200 {"data": message}
//	POST /messages/{id}/cancel  messages.send  200 {"data": message}
func MountMessages(g gin.IRoutes, accept *acceptance.Service, msgs *messages.Service) {
	h := &messageHandlers{svc: accept}
	r := resource.Messages{Svc: msgs, Caller: caller}
	g.POST("/messages", RequireScope(apikey.ScopeMessagesSend), h.send)
	g.GET("/messages", RequireScope(apikey.ScopeMessagesRead), r.List)
	g.GET("/messages/:id", RequireScope(apikey.ScopeMessagesRead), r.Get)
	g.POST("/messages/:id/cancel", RequireScope(apikey.ScopeMessagesSend), oneByID("message", http.StatusOK, accept.Cancel))
}

// send is POST /messages: 202 with the queued message, or the first answer
// again for a repeated Idempotency-Key.
func (h *messageHandlers) send(c *gin.Context) {
	p := MustPrincipal(c)
	var req sendrequest.SendRequest
	if !httpx.Bind(c, &req) {
		return
	}
	req.IdempotencyKey = c.GetHeader(sendrequest.IdempotencyKeyHeader)
	res, err := h.svc.Send(c.Request.Context(), p.Tenant, p.Organization.DefaultDailyLimit, &req)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	writeSendResult(c, res)
}

// writeSendResult writes an accepted send's answer: 202 with
// {"data": <the message's resource>}; for a replay the resource is the
// first acceptance's bytes, so the answer is byte for byte the first one.
func writeSendResult(c *gin.Context, res acceptance.Result) {
	if res.Replayed {
		c.Header(IdempotentReplayedHeader, "true")
	}
	c.Header("Location", BasePath+"/messages/"+strconv.FormatInt(res.MessageID, 10))
	body := make([]byte, 0, len(`{"data":}`)+len(res.Resource))
	body = append(append(append(body, `{"data":`...), res.Resource...), '}')
	c.Data(http.StatusAccepted, "application/json; charset=utf-8", body)
}
