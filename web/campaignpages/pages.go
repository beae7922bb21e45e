// Package campaignpages is the dashboard's campaign pages: the list of
// the organization's campaigns with their progress, the new-campaign form
// (sender numbers, an approved template or a text, send_at, the reserve,
// and a CSV file of recipients), and a campaign's page: its fields, a
// progress bar with its counts by status and skip reasons, the buttons
// its state allows (start, pause, resume, cancel), more recipients while
// it is a draft, what a started one waits for and the room each of its
// sender numbers gives it today, and its recipients, paged and filtered
// by status. It renders through the dashboard's core (package web) and
// calls the Tenant API's /campaigns service and the release's Explain.
package campaignpages

import (
	"context"
	"errors"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/campaignrelease"
	"github.com/bizmsg/platform/platform/campaigns"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/templates"
	"github.com/bizmsg/platform/web"
)

// Explainer says what a campaign waits for now and what room each sender
// number of its pool gives the release; *campaignrelease.Service is one.
type Explainer interface {
	Explain(ctx context.Context, t db.Tenant, id int64) (campaignrelease.Explanation, error)
}

// Config configures the pages. Every field is required but Release.
type Config struct {
	// Dashboard is the core the pages render through.
	Dashboard *web.Dashboard
	// Campaigns is the organization's campaigns, their recipients and
	// states.
	Campaigns *campaigns.Service
	// Senders offers the organization's active numbers and names a
	// campaign's; Templates offers its approved templates.
	Senders   *senders.Service
	Templates *templates.Service
	// Release explains a started campaign's pace on its page. Nil: the
	// page does not.
	Release Explainer
}

// Pages serves the campaign pages.
type Pages struct {
	*web.Dashboard
	cfg Config
}

// New checks cfg and returns the pages.
func New(cfg Config) (*Pages, error) {
	if cfg.Dashboard == nil || cfg.Campaigns == nil || cfg.Senders == nil || cfg.Templates == nil {
		return nil, errors.New("campaignpages: Config.Dashboard, Campaigns, Senders and Templates are required")
	}
	return &Pages{Dashboard: cfg.Dashboard, cfg: cfg}, nil
}

// Mount registers the pages on the dashboard's signed-in routes. Every
// member reads; the forms and buttons are for owners and admins.
//
//	GET  /campaigns                    the campaigns with their progress (?status=&cursor=)
//	GET  /campaigns/new, POST /campaigns  the new-campaign form; create it, with a CSV of recipients
//	GET  /campaigns/:id                one campaign: fields, progress, actions, recipients (?status=&cursor=)
//	POST /campaigns/:id/recipients     add recipients from a CSV (a draft's)
//	POST /campaigns/:id/start|pause|resume  change its state
//	GET  /campaigns/:id/cancel, POST   confirm, cancel
func (d *Pages) Mount(s gin.IRouter) {
	s.GET("/campaigns", d.campaignsPage)
	s.GET("/campaigns/new", d.newCampaignPage)
	s.POST("/campaigns", d.createCampaign)
	s.GET("/campaigns/:id", d.campaignPage)
	s.POST("/campaigns/:id/recipients", d.addRecipients)
	s.POST("/campaigns/:id/start", d.transition("start campaigns", d.cfg.Campaigns.Start, "campaign_started"))
	s.POST("/campaigns/:id/pause", d.transition("pause campaigns", d.cfg.Campaigns.Pause, "campaign_paused"))
	s.POST("/campaigns/:id/resume", d.transition("resume campaigns", d.cfg.Campaigns.Resume, "campaign_resumed"))
	web.FormPage(s, "/campaigns/:id/cancel", d.cancelCampaignPage, d.transition("cancel campaigns", d.cfg.Campaigns.Cancel, "campaign_canceled"))
}
