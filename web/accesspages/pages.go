// Package accesspages is the dashboard's pages on who and what may act in
// an organization: its API keys, its members and the audit log of what
// they did. It renders through the dashboard's core (package web) and calls
// the services the Central API calls.
package accesspages

import (
	"errors"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/audit"
	"github.com/bizmsg/platform/platform/keys"
	"github.com/bizmsg/platform/web"
)

// Config configures the pages. Every field is required.
type Config struct {
	// Dashboard is the core the pages render through.
	Dashboard *web.Dashboard
	// Accounts manages members; Keys the API keys (and finds a member);
	// Audit reads the audit log.
	Accounts *accounts.Service
	Keys     *keys.Service
	Audit    *audit.Service
}

// Pages serves the keys, members and audit pages.
type Pages struct {
	*web.Dashboard
	cfg Config
}

// New checks cfg and returns the pages.
func New(cfg Config) (*Pages, error) {
	if cfg.Dashboard == nil || cfg.Accounts == nil || cfg.Keys == nil || cfg.Audit == nil {
		return nil, errors.New("accesspages: Config.Dashboard, Accounts, Keys and Audit are required")
	}
	return &Pages{Dashboard: cfg.Dashboard, cfg: cfg}, nil
}

// Mount registers the pages on the dashboard's signed-in routes.
//
//	GET  /keys, POST /keys         API keys; create one (shown once)
//	POST /keys/:id/reveal          "Show key" (encrypted storage)
//	GET  /keys/:id/revoke, POST    confirm, revoke
//	GET  /members, POST /members   members; add one with a role
//	GET  /members/:id/remove, POST confirm, remove
//	GET  /audit                    the audit log with the API's filters and paging (owners and admins)
func (d *Pages) Mount(s gin.IRouter) {
	web.FormPage(s, "/keys", d.keysPage, d.createKey)
	s.POST("/keys/:id/reveal", d.revealKey)
	web.FormPage(s, "/keys/:id/revoke", d.revokeKeyPage, d.revokeKey)
	web.FormPage(s, "/members", d.membersPage, d.addMember)
	web.FormPage(s, "/members/:id/remove", d.removeMemberPage, d.removeMember)
	s.GET("/audit", d.auditPage)
}
