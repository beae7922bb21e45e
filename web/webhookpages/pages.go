// Package webhookpages is the dashboard's webhook pages: the
// organization's endpoints (each secret shown once), their delivery logs
// and redelivery. It renders through the dashboard's core (package web)
// and calls the Tenant API's /webhooks service.
package webhookpages

import (
	"errors"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/webhooks"
	"github.com/bizmsg/platform/web"
)

// Config configures the pages. Every field is required.
type Config struct {
	// Dashboard is the core the pages render through.
	Dashboard *web.Dashboard
	// Webhooks manages the endpoints and their delivery logs.
	Webhooks *webhooks.Service
}

// Pages serves the webhook pages.
type Pages struct {
	*web.Dashboard
	cfg Config
}

// New checks cfg and returns the pages.
func New(cfg Config) (*Pages, error) {
	if cfg.Dashboard == nil || cfg.Webhooks == nil {
		return nil, errors.New("webhookpages: Config.Dashboard and Webhooks are required")
	}
	return &Pages{Dashboard: cfg.Dashboard, cfg: cfg}, nil
}

// Mount registers the pages on the dashboard's signed-in routes.
//
//	GET  /webhooks, POST /webhooks endpoints; add one (its secret shown once; owners and admins)
//	GET  /webhooks/:id             one endpoint and its delivery log (?state=&event_type=&cursor=)
//	POST /webhooks/:id/rotate      new secret, shown once (owners and admins, as every POST below)
//	POST /webhooks/:id/enable, /disable
//	GET  /webhooks/:id/delete, POST confirm, delete
//	POST /webhooks/:id/deliveries/:delivery_id/redeliver
//	POST /webhooks/:id/deliveries/redeliver  every failed delivery since a time
func (d *Pages) Mount(s gin.IRouter) {
	web.FormPage(s, "/webhooks", d.webhooksPage, d.createWebhook)
	s.GET("/webhooks/:id", d.webhookPage)
	s.POST("/webhooks/:id/rotate", d.rotateWebhookSecret)
	s.POST("/webhooks/:id/enable", d.enableWebhook)
	s.POST("/webhooks/:id/disable", d.disableWebhook)
	web.FormPage(s, "/webhooks/:id/delete", d.deleteWebhookPage, d.deleteWebhook)
	s.POST("/webhooks/:id/deliveries/redeliver", d.redeliverFailedWebhooks)
	s.POST("/webhooks/:id/deliveries/:delivery_id/redeliver", d.redeliverWebhook)
}
