package app

import (
	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/web"
)

// dashboardRoutes mounts the dashboard (package web) on r, over the same
// services the Central API uses. Its paths are outside /api and the
// operational endpoints, so it shadows none of them.
func (a *App) dashboardRoutes(r *gin.Engine) {
	d, err := web.New(web.Config{
		Pool:      a.DB.Pool,
		Accounts:  a.Accounts,
		Keys:      a.Keys,
		Senders:   a.Senders,
		Messages:  a.Messages,
		Usage:     a.Usage,
		Webhooks:  a.Webhooks,
		Audit:     a.Audit,
		Consent:   a.Consent,
		Templates: a.Templates,
		Secret:    a.cfg.APIKeyPepper,
		Clock:     a.clock,
		Logger:    a.log,
	})
	if err != nil {
		// The configuration was validated before (services built, secret
		// length checked by config), and the templates are embedded: a
		// failure here is a programming error.
		panic(err)
	}
	d.Mount(r)
}
