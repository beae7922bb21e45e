package resource

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/usage"
)

// Messages serves the message history both APIs read: GET /messages and
// GET /messages/{id}, with the same parameters and bodies. (Sending is the
// Tenant API's alone.)
type Messages struct {
	Svc    *messages.Service
	Caller CallerFunc
}

// List is GET /messages: one page of the history, newest first, with the
// filters of docs/api.md §Message history.
func (h Messages) List(c *gin.Context) {
	out, err := h.Svc.List(c.Request.Context(), h.Caller(c).Tenant, messages.ListQueryFrom(c.Request.URL.Query()))
	httpx.Reply(c, http.StatusOK, out, err)
}

// Get is GET /messages/{id}.
func (h Messages) Get(c *gin.Context) { one(c, h.Caller, "message", h.Svc.Get) }

// Usage serves GET /usage[?from=YYYY-MM-DD&to=YYYY-MM-DD].
type Usage struct {
	Svc    *usage.Service
	Caller CallerFunc
}

// Report is GET /usage: the organization's usage per day and in total.
func (h Usage) Report(c *gin.Context) {
	r, err := h.Svc.Report(c.Request.Context(), h.Caller(c).Tenant, usage.Query{From: c.Query("from"), To: c.Query("to")})
	httpx.Data(c, http.StatusOK, r, err)
}
