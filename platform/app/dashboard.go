package app

import (
	"errors"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/web"
	"github.com/bizmsg/platform/web/accesspages"
	"github.com/bizmsg/platform/web/campaignpages"
	"github.com/bizmsg/platform/web/optoutpages"
	"github.com/bizmsg/platform/web/templatepages"
	"github.com/bizmsg/platform/web/webhookpages"
)

// dashboardRoutes mounts the dashboard (package web and its page groups)
// on r, over the same services the Central API uses. Its paths are outside
// /api and the operational endpoints, so it shadows none of them.
func (a *App) dashboardRoutes(r *gin.Engine) {
	d, err := web.New(web.Config{
		DB:        a.DB,
		Accounts:  a.Accounts,
		Keys:      a.Keys,
		Senders:   a.Senders,
		Messages:  a.Messages,
		Scheduled: a.Acceptance,
		Usage:     a.Usage,
		Secret:    a.cfg.APIKeyPepper,
		Clock:     a.clock,
		Logger:    a.log,
	})
	access, errA := accesspages.New(accesspages.Config{Dashboard: d, Accounts: a.Accounts, Keys: a.Keys, Audit: a.Audit})
	optOuts, errO := optoutpages.New(optoutpages.Config{Dashboard: d, Consent: a.Consent})
	tmpls, errT := templatepages.New(templatepages.Config{Dashboard: d, Templates: a.Templates})
	hooks, errH := webhookpages.New(webhookpages.Config{Dashboard: d, Webhooks: a.Webhooks})
	camps, errC := campaignpages.New(campaignpages.Config{Dashboard: d, Campaigns: a.Campaigns, Senders: a.Senders,
		Templates: a.Templates, Release: a.CampaignRelease})
	if err := errors.Join(err, errA, errO, errT, errH, errC); err != nil {
		// The configuration was validated before (services built, secret
		// length checked by config), and the templates are embedded: a
		// failure here is a programming error.
		panic(err)
	}
	d.Mount(r, access, optOuts, tmpls, hooks, camps)
}
