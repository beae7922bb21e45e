package resource

import (
	"context"
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
func (h Senders) Get(c *gin.Context) { one(c, h.Caller, "sender number", h.Svc.Get) }

// Update is PATCH /sender-numbers/{id}: display_name, and
// daily_limit_override for owners and admins (the service answers 403 to
// others).
func (h Senders) Update(c *gin.Context) {
	oneWith(c, h.Caller, "sender number", func(ctx context.Context, who Caller, id int64, req senders.UpdateRequest) (senders.Sender, error) {
		return h.Svc.Update(ctx, who.Tenant, id, req.Input(), who.Admin)
	})
}

// Verify is POST /sender-numbers/{id}/verify {"otp": "123456"}.
func (h Senders) Verify(c *gin.Context) {
	oneWith(c, h.Caller, "sender number", func(ctx context.Context, who Caller, id int64, req senders.VerifyRequest) (senders.Sender, error) {
		return h.Svc.Verify(ctx, who.Tenant, id, req.OTP)
	})
}

// ResendOTP is POST /sender-numbers/{id}/resend-otp. It takes no body (one
// sent is ignored).
func (h Senders) ResendOTP(c *gin.Context) { one(c, h.Caller, "sender number", h.Svc.ResendOTP) }
