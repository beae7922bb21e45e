package tenant

import (
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/webhooks"
)

// webhookHandlers serves the Tenant API's webhook routes.
type webhookHandlers struct {
	svc *webhooks.Service
}

// MountWebhooks registers the webhook routes on g, the authenticated group
// Mount returns, each behind the webhooks.manage scope:
//
//	POST   /webhooks                                            201 {"data": endpoint with secret}
//	GET    /webhooks                                            200 {"data": [...], "next_cursor": ...}
//	GET    /webhooks/{id}                                       200 {"data": endpoint}
//	PATCH  /webhooks/{id}                                       200 {"data": endpoint}
//	DELETE /webhooks/{id}                                       204
//	POST   /webhooks/{id}/rotate-secret                         200 {"data": endpoint with secret}
//	GET    /webhooks/{id}/deliveries                            200 {"data": [...], "next_cursor": ...}
//	POST   /webhooks/{id}/deliveries/{delivery_id}/redeliver    202 {"data": delivery}
//	POST   /webhooks/{id}/deliveries/redeliver {"since": ...}   202 {"data": {"redelivered": n}}
func MountWebhooks(g gin.IRoutes, svc *webhooks.Service) {
	h := &webhookHandlers{svc: svc}
	scope := RequireScope(apikey.ScopeWebhooksManage)
	g.POST("/webhooks", scope, h.create)
	g.GET("/webhooks", scope, h.list)
	g.GET("/webhooks/:id", scope, oneByID("webhook endpoint", http.StatusOK, svc.Get))
	g.PATCH("/webhooks/:id", scope, h.update)
	g.DELETE("/webhooks/:id", scope, deleteByID("webhook endpoint", svc.Delete))
	g.POST("/webhooks/:id/rotate-secret", scope, h.rotate)
	g.GET("/webhooks/:id/deliveries", scope, h.deliveries)
	g.POST("/webhooks/:id/deliveries/redeliver", scope, h.redeliverFailed)
	g.POST("/webhooks/:id/deliveries/:delivery_id/redeliver", scope, h.redeliver)
}

// endpointID reads the {id} path parameter; false has answered 404.
func endpointID(c *gin.Context) (int64, bool) { return httpx.PathIDOr404(c, "webhook endpoint") }

// withSecret answers an endpoint carrying its secret, kept out of caches,
// or err.
func withSecret(c *gin.Context, status int, e webhooks.Endpoint, err error) {
	httpx.ReplySecret(c, status, gin.H{"data": e}, err)
}

// create is POST /webhooks: 201 with the endpoint and its secret (the only
// time it is shown, with rotation's).
func (h *webhookHandlers) create(c *gin.Context) {
	var in webhooks.EndpointInput
	if !httpx.Bind(c, &in) {
		return
	}
	e, err := h.svc.Create(c.Request.Context(), MustPrincipal(c).Tenant, in)
	withSecret(c, http.StatusCreated, e, err)
}

// list is GET /webhooks: the organization's endpoints, newest first.
func (h *webhookHandlers) list(c *gin.Context) {
	page, err := h.svc.List(c.Request.Context(), MustPrincipal(c).Tenant, c.Query("limit"), c.Query("cursor"))
	httpx.Reply(c, http.StatusOK, page, err)
}

// update is PATCH /webhooks/{id}.
func (h *webhookHandlers) update(c *gin.Context) {
	id, ok := endpointID(c)
	if !ok {
		return
	}
	var in webhooks.EndpointPatch
	if !httpx.Bind(c, &in) {
		return
	}
	e, err := h.svc.Update(c.Request.Context(), MustPrincipal(c).Tenant, id, in)
	httpx.Data(c, http.StatusOK, e, err)
}

// rotate is POST /webhooks/{id}/rotate-secret: 200 with the new secret.
func (h *webhookHandlers) rotate(c *gin.Context) {
	id, ok := endpointID(c)
	if !ok {
		return
	}
	e, err := h.svc.RotateSecret(c.Request.Context(), MustPrincipal(c).Tenant, id)
	withSecret(c, http.StatusOK, e, err)
}

// deliveries is GET /webhooks/{id}/deliveries: the delivery log.
func (h *webhookHandlers) deliveries(c *gin.Context) {
	id, ok := endpointID(c)
	if !ok {
		return
	}
	page, err := h.svc.Deliveries(c.Request.Context(), MustPrincipal(c).Tenant, id, webhooks.DeliveryQueryFrom(c.Request.URL.Query()))
	httpx.Reply(c, http.StatusOK, page, err)
}

// redeliver is POST /webhooks/{id}/deliveries/{delivery_id}/redeliver:
// 202 with the new pending delivery.
func (h *webhookHandlers) redeliver(c *gin.Context) {
	id, ok := endpointID(c)
	if !ok {
		return
	}
	deliveryID, ok := httpx.ParseID(c.Param("delivery_id"))
	if !ok {
		httpx.Fail(c, apperr.NotFound("webhook delivery"))
		return
	}
	d, err := h.svc.Redeliver(c.Request.Context(), MustPrincipal(c).Tenant, id, deliveryID)
	httpx.Data(c, http.StatusAccepted, d, err)
}

// redeliverRequest is the body of POST /webhooks/{id}/deliveries/redeliver.
type redeliverRequest struct {
	Since *string `json:"since"`
}

// redeliverFailed is POST /webhooks/{id}/deliveries/redeliver
// {"since": RFC 3339}: 202 with how many failed deliveries were queued
// again.
func (h *webhookHandlers) redeliverFailed(c *gin.Context) {
	id, ok := endpointID(c)
	if !ok {
		return
	}
	var req redeliverRequest
	if !httpx.Bind(c, &req) {
		return
	}
	var v apperr.Validation
	var since time.Time
	switch {
	case req.Since == nil || strings.TrimSpace(*req.Since) == "":
		v.Add("since", "is required")
	default:
		t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(*req.Since))
		if err != nil {
			v.Add("since", "must be an RFC 3339 date-time such as 2026-11-22T14:03:05Z")
		}
		since = t
	}
	if err := v.Err(); err != nil {
		httpx.Fail(c, err)
		return
	}
	n, err := h.svc.RedeliverFailed(c.Request.Context(), MustPrincipal(c).Tenant, id, since)
	httpx.Data(c, http.StatusAccepted, gin.H{"redelivered": n}, err)
}
