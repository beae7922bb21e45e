package central

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/senders"
)

// senderList is the body of GET /sender-numbers: every number of the
// organization (no pagination), newest first.
type senderList struct {
	Data       []senders.Sender `json:"data"`
	NextCursor *string          `json:"next_cursor"`
}

// senderHandlers serves the dashboard's sender-number routes.
type senderHandlers struct {
	svc *senders.Service
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
	h := &senderHandlers{svc: svc}
	g.GET("/sender-numbers", h.list)
	g.POST("/sender-numbers", h.register)
	g.GET("/sender-numbers/:id", h.get)
	g.PATCH("/sender-numbers/:id", h.update)
	g.POST("/sender-numbers/:id/verify", h.verify)
	g.POST("/sender-numbers/:id/resend-otp", h.resendOTP)
}

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

func (h *senderHandlers) get(c *gin.Context) {
	p := MustPrincipal(c)
	id, ok := httpx.PathID(c)
	if !ok {
		httpx.Fail(c, apperr.NotFound("sender number"))
		return
	}
	s, err := h.svc.Get(c.Request.Context(), p.Tenant, id)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.JSON(c, http.StatusOK, gin.H{"data": s})
}

func (h *senderHandlers) update(c *gin.Context) {
	p := MustPrincipal(c)
	id, ok := httpx.PathID(c)
	if !ok {
		httpx.Fail(c, apperr.NotFound("sender number"))
		return
	}
	var req senders.UpdateRequest
	if err := httpx.BindJSON(c, &req); err != nil {
		httpx.Fail(c, err)
		return
	}
	s, err := h.svc.Update(c.Request.Context(), p.Tenant, id, req.Input(), p.IsAdmin())
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.JSON(c, http.StatusOK, gin.H{"data": s})
}

func (h *senderHandlers) verify(c *gin.Context) {
	p := MustPrincipal(c)
	id, ok := httpx.PathID(c)
	if !ok {
		httpx.Fail(c, apperr.NotFound("sender number"))
		return
	}
	var req senders.VerifyRequest
	if err := httpx.BindJSON(c, &req); err != nil {
		httpx.Fail(c, err)
		return
	}
	s, err := h.svc.Verify(c.Request.Context(), p.Tenant, id, req.OTP)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.JSON(c, http.StatusOK, gin.H{"data": s})
}

// resendOTP takes no body (one sent is ignored).
func (h *senderHandlers) resendOTP(c *gin.Context) {
	p := MustPrincipal(c)
	id, ok := httpx.PathID(c)
	if !ok {
		httpx.Fail(c, apperr.NotFound("sender number"))
		return
	}
	s, err := h.svc.ResendOTP(c.Request.Context(), p.Tenant, id)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.JSON(c, http.StatusOK, gin.H{"data": s})
}
