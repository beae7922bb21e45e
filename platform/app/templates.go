package app

import (
	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/jobs"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/templates"
	"github.com/bizmsg/platform/tenant"
)

// templateService builds the message-template service (docs/api.md,
// §Templates): its review jobs go through an insert-only River client on
// bun's database/sql handle (its transactions are bun's), its status
// changes emit webhooks through a.Webhooks, and it submits templates to
// a.Network. Both must exist.
func (a *App) templateService() error {
	jobs, err := queue.NewSQLInserter(a.DB.Bun.DB, a.log)
	if err != nil {
		return err
	}
	svc, err := templates.New(templates.Config{
		DB:      a.DB,
		Jobs:    jobs,
		Events:  a.Webhooks,
		Network: a.Network,
		Clock:   a.clock,
	})
	if err != nil {
		return err
	}
	a.Templates = svc
	return nil
}

// templateRoutes mounts the Tenant API's template endpoints.
func (a *App) templateRoutes() {
	tenant.MountTemplates(a.TenantRoutes, a.Templates)
}

// templateWorkers registers the review submission worker.
func (a *App) templateWorkers(workers *river.Workers) {
	river.AddWorker(workers, &jobs.NetworkWorker[queue.TemplateReviewArgs]{Call: a.Templates.Submit})
}
