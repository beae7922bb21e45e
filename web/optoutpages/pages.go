// Package optoutpages is the dashboard's opt-out pages: the list of phones
// that asked for no more messages, adding and removing one, and the
// confirmation texts. It renders through the dashboard's core (package
// web) and calls the Tenant API's /opt-outs service.
package optoutpages

import (
	"errors"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/consent"
	"github.com/bizmsg/platform/web"
)

// Config configures the pages. Every field is required.
type Config struct {
	// Dashboard is the core the pages render through.
	Dashboard *web.Dashboard
	// Consent is the opt-out list and its confirmation texts.
	Consent *consent.Service
}

// Pages serves the opt-out pages.
type Pages struct {
	*web.Dashboard
	cfg Config
}

// New checks cfg and returns the pages.
func New(cfg Config) (*Pages, error) {
	if cfg.Dashboard == nil || cfg.Consent == nil {
		return nil, errors.New("optoutpages: Config.Dashboard and Consent are required")
	}
	return &Pages{Dashboard: cfg.Dashboard, cfg: cfg}, nil
}

// Mount registers the pages on the dashboard's signed-in routes.
//
//	GET  /opt-outs                 the opt-out list (?phone=&source=&cursor=), reply texts
//	POST /opt-outs                 add a phone (owners and admins, as every POST below)
//	GET  /opt-outs/remove?phone=, POST /opt-outs/remove  confirm, remove (phone in the body)
//	POST /opt-outs/settings        the confirmation texts
func (d *Pages) Mount(s gin.IRouter) {
	web.FormPage(s, "/opt-outs", d.optOutsPage, d.addOptOut)
	web.FormPage(s, "/opt-outs/remove", d.removeOptOutPage, d.removeOptOut)
	s.POST("/opt-outs/settings", d.saveReplies)
}
