package resource

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/page"
	"github.com/bizmsg/platform/platform/senders"
)

// Senders serves /sender-numbers. The Tenant API mounts List and Register;
// the Central API (the dashboard's) all of them.
type Senders struct {
	Svc    *senders.Service
	Caller CallerFunc
}

// List is GET /sender-numbers: every number of the organization (no
// paging), newest first.
func (h Senders) List(c *gin.Context) {
	list, err := h.Svc.List(c.Request.Context(), h.Caller(c).Tenant)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.JSON(c, http.StatusOK, page.Of[senders.Sender]{Items: list})
}

// Register is POST /sender-numbers: 201 with the number in
// pending_verification, its OTP on its way to the owner's network account.
func (h Senders) Register(c *gin.Context) {
	var req senders.RegisterRequest
	if !httpx.Bind(c, &req) {
		return
	}
	s, err := h.Svc.Register(c.Request.Context(), h.Caller(c).Tenant, req.Input())
	httpx.Data(c, http.StatusCreated, s, err)
}

// Get is GET /sender-numbers/{id}.
func (h Senders) Get(c *gin.Context) {
	id, ok := httpx.PathIDOr404(c, "sender number")
	if !ok {
		return
	}
	s, err := h.Svc.Get(c.Request.Context(), h.Caller(c).Tenant, id)
	httpx.Data(c, http.StatusOK, s, err)
}

// Update is PATCH /sender-numbers/{id}: display_name, and
// daily_limit_override for owners and admins (the service answers 403 to
// others).
func (h Senders) Update(c *gin.Context) {
	id, ok := httpx.PathIDOr404(c, "sender number")
	if !ok {
		return
	}
	var req senders.UpdateRequest
	if !httpx.Bind(c, &req) {
		return
	}
	who := h.Caller(c)
	s, err := h.Svc.Update(c.Request.Context(), who.Tenant, id, req.Input(), who.Admin)
	httpx.Data(c, http.StatusOK, s, err)
}

// Verify is POST /sender-numbers/{id}/verify {"otp": "123456"}.
func (h Senders) Verify(c *gin.Context) {
	id, ok := httpx.PathIDOr404(c, "sender number")
	if !ok {
		return
	}
	var req senders.VerifyRequest
	if !httpx.Bind(c, &req) {
		return
	}
	s, err := h.Svc.Verify(c.Request.Context(), h.Caller(c).Tenant, id, req.OTP)
	httpx.Data(c, http.StatusOK, s, err)
}

// ResendOTP is POST /sender-numbers/{id}/resend-otp. It takes no body (one
// sent is ignored).
func (h Senders) ResendOTP(c *gin.Context) {
	id, ok := httpx.PathIDOr404(c, "sender number")
	if !ok {
		return
	}
	s, err := h.Svc.ResendOTP(c.Request.Context(), h.Caller(c).Tenant, id)
	httpx.Data(c, http.StatusOK, s, err)
}
