package app

import (
	"github.com/bizmsg/platform/platform/campaigns"
	"github.com/bizmsg/platform/tenant"
)

// campaignService builds the campaign service (docs/api.md, §Campaigns):
// it resolves templates through a.Templates and emits campaign.started
// through a.Webhooks, so both must exist. No releaser yet: a started
// campaign's recipients stay pending until the release is built.
func (a *App) campaignService() error {
	svc, err := campaigns.New(campaigns.Config{
		DB:        a.DB,
		Templates: a.Templates,
		Events:    a.Webhooks,
		Clock:     a.clock,
	})
	if err != nil {
		return err
	}
	a.Campaigns = svc
	return nil
}

// campaignRoutes mounts the Tenant API's campaign endpoints.
func (a *App) campaignRoutes() {
	tenant.MountCampaigns(a.TenantRoutes, a.Campaigns)
}
