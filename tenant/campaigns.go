package tenant

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/campaigns"
	"github.com/bizmsg/platform/platform/httpx"
)

// campaignHandlers serves the Tenant API's campaign routes.
type campaignHandlers struct {
	svc *campaigns.Service
}

// MountCampaigns registers the campaign routes on g, the authenticated
// group Mount returns, each behind the campaigns.manage scope (docs/api.md,
// §Campaigns):
//
//	POST /campaigns                       201 {"data": campaign}, draft
//	GET  /campaigns[?status=&limit=&cursor=]  200 {"data": [...], "next_cursor": ...}
//	GET  /campaigns/{id}                  200 {"data": campaign}
//	POST /campaigns/{id}/recipients       200 {"data": {added, duplicates, invalid}}; JSON or CSV
//	GET  /campaigns/{id}/recipients[?status=&limit=&cursor=]  200 list
//	POST /campaigns/{id}/start|pause|resume|cancel  200 {"data": campaign}
func MountCampaigns(g gin.IRoutes, svc *campaigns.Service) {
	h := &campaignHandlers{svc: svc}
	scope := RequireScope(apikey.ScopeCampaignsManage)
	g.POST("/campaigns", scope, h.create)
	g.GET("/campaigns", scope, h.list)
	g.GET("/campaigns/:id", scope, oneByID("campaign", http.StatusOK, svc.Get))
	g.POST("/campaigns/:id/recipients", scope, h.addRecipients)
	g.GET("/campaigns/:id/recipients", scope, h.recipients)
	g.POST("/campaigns/:id/start", scope, oneByID("campaign", http.StatusOK, svc.Start))
	g.POST("/campaigns/:id/pause", scope, oneByID("campaign", http.StatusOK, svc.Pause))
	g.POST("/campaigns/:id/resume", scope, oneByID("campaign", http.StatusOK, svc.Resume))
	g.POST("/campaigns/:id/cancel", scope, oneByID("campaign", http.StatusOK, svc.Cancel))
}

// campaignID reads the {id} path parameter; false has answered 404.
func campaignID(c *gin.Context) (int64, bool) { return httpx.PathIDOr404(c, "campaign") }

// create is POST /campaigns: 201 with the draft.
func (h *campaignHandlers) create(c *gin.Context) {
	var in campaigns.CreateRequest
	if !httpx.Bind(c, &in) {
		return
	}
	camp, err := h.svc.Create(c.Request.Context(), MustPrincipal(c).Tenant, &in)
	httpx.Data(c, http.StatusCreated, camp, err)
}

// list is GET /campaigns: newest first.
func (h *campaignHandlers) list(c *gin.Context) {
	page, err := h.svc.List(c.Request.Context(), MustPrincipal(c).Tenant, campaigns.ListQuery{
		Status: c.Query("status"), Limit: c.Query("limit"), Cursor: c.Query("cursor"),
	})
	httpx.Reply(c, http.StatusOK, page, err)
}

// addRecipients is POST /campaigns/{id}/recipients: the body, JSON or CSV
// by its Content-Type, at most 1 MiB (413 past it).
func (h *campaignHandlers) addRecipients(c *gin.Context) {
	id, ok := campaignID(c)
	if !ok {
		return
	}
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			httpx.Fail(c, apperr.Wrap(err, apperr.KindTooLarge, "payload_too_large",
				fmt.Sprintf("The request body must not exceed %d bytes.", tooLarge.Limit)))
			return
		}
		httpx.Fail(c, apperr.Wrap(err, apperr.KindMalformed, "malformed_request", "The request body could not be read."))
		return
	}
	added, err := h.svc.AddRecipients(c.Request.Context(), MustPrincipal(c).Tenant, id, c.GetHeader("Content-Type"), body)
	httpx.Data(c, http.StatusOK, added, err)
}

// recipients is GET /campaigns/{id}/recipients: the last added first.
func (h *campaignHandlers) recipients(c *gin.Context) {
	id, ok := campaignID(c)
	if !ok {
		return
	}
	page, err := h.svc.ListRecipients(c.Request.Context(), MustPrincipal(c).Tenant, id, campaigns.RecipientQuery{
		Status: c.Query("status"), Limit: c.Query("limit"), Cursor: c.Query("cursor"),
	})
	httpx.Reply(c, http.StatusOK, page, err)
}
