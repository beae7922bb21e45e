// Package templatepages is the dashboard's message template pages: the
// list, the create form with a live preview, one template with its review
// and its deletion. It renders through the dashboard's core (package web)
// and calls the Tenant API's /templates service.
package templatepages

import (
	"errors"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/templates"
	"github.com/bizmsg/platform/web"
)

// Config configures the pages. Every field is required.
type Config struct {
	// Dashboard is the core the pages render through.
	Dashboard *web.Dashboard
	// Templates is the organization's message templates and their review.
	Templates *templates.Service
}

// Pages serves the template pages.
type Pages struct {
	*web.Dashboard
	cfg Config
}

// New checks cfg and returns the pages.
func New(cfg Config) (*Pages, error) {
	if cfg.Dashboard == nil || cfg.Templates == nil {
		return nil, errors.New("templatepages: Config.Dashboard and Templates are required")
	}
	return &Pages{Dashboard: cfg.Dashboard, cfg: cfg}, nil
}

// Mount registers the pages on the dashboard's signed-in routes.
//
//	GET  /templates                message templates (?status=&category=&name=&cursor=)
//	GET  /templates/new, POST /templates  the create form with a live preview; create (owners and admins)
//	GET  /templates/:id            one template: texts, examples, status, a rejection's reason
//	GET  /templates/:id/delete, POST  confirm, delete (owners and admins)
func (d *Pages) Mount(s gin.IRouter) {
	s.GET("/templates", d.templatesPage)
	s.GET("/templates/new", d.newTemplatePage)
	s.POST("/templates", d.createTemplate)
	s.GET("/templates/:id", d.templatePage)
	web.FormPage(s, "/templates/:id/delete", d.deleteTemplatePage, d.deleteTemplate)
}
