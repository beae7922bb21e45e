package tenant

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/senders"
)

// senderList is the body of GET /sender-numbers: every number of the
// organization (no pagination), newest first.
type senderList struct {
	Data       []senders.Sender `json:"data"`
	NextCursor *string          `json:"next_cursor"`
}

// senderHandlers serves the Tenant API's sender-number routes.
type senderHandlers struct {
	svc *senders.Service
}

// MountSenders registers the sender-number routes on g, the authenticated
// group Mount returns:
//
//	POST /sender-numbers  messages.send                  201 {"data": sender}
//	GET  /sender-numbers  messages.send or messages.read 200 {"data": [...]}
//
// OTP entry, resend and limits are dashboard (Central API) operations.
func MountSenders(g gin.IRoutes, svc *senders.Service) {
	h := &senderHandlers{svc: svc}
	g.POST("/sender-numbers", RequireScope(apikey.ScopeMessagesSend), h.register)
	g.GET("/sender-numbers", RequireAnyScope(apikey.ScopeMessagesSend, apikey.ScopeMessagesRead), h.list)
}

// register is POST /sender-numbers: the number in pending_verification, its
// OTP on its way to the owner's network account.
func (h *senderHandlers) register(c *gin.Context) {
	p := MustPrincipal(c)
	var req senders.RegisterRequest
	if err := httpx.BindJSON(c, &req); err != nil {
		httpx.Fail(c, err)
		return
	}
	s, err := h.svc.Register(c.Request.Context(), p.Tenant, req.Input())
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.JSON(c, http.StatusCreated, gin.H{"data": s})
}

// list is GET /sender-numbers.
func (h *senderHandlers) list(c *gin.Context) {
	p := MustPrincipal(c)
	list, err := h.svc.List(c.Request.Context(), p.Tenant)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	if list == nil {
		list = []senders.Sender{}
	}
	httpx.JSON(c, http.StatusOK, senderList{Data: list})
}
