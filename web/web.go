// Package web is the dashboard: server-rendered HTML pages, served by the
// same binary as the APIs, for the members of an organization. It signs
// people up and in, and lets them add and confirm sender numbers (the OTP is
// entered here, docs/api.md §Sender numbers), manage API keys ("Show key"
// with encrypted storage), read the message history and usage, manage
// members and webhook endpoints (with their delivery logs), write message
// templates (with a live preview) and follow their review, keep the
// opt-out list and its confirmation texts, run campaigns (a CSV of
// recipients, a live progress bar), read the audit log (owners and
// admins) and copy a first curl command.
//
// The pages are html/template files and one stylesheet and one small script
// embedded in the binary: no build step. Handlers are thin: they read a form,
// call the same services the APIs call (accounts.Service, keys.Service,
// senders.Service, messages.Service, usage.Service, webhooks.Service,
// templates.Service, consent.Service, campaigns.Service) and render the
// result, so no business rule lives here.
//
// This package is the dashboard's core (sessions, CSRF, rendering, sign-up
// and log-in) and its home pages (overview, sender numbers, messages,
// first send). The other pages are groups in packages of their own that
// render through the core (pages.go is what they use of it) and mount on
// its signed-in routes: web/accesspages (API keys, members, audit log),
// web/campaignpages, web/optoutpages, web/templatepages and
// web/webhookpages. They never import each other.
//
// # Sessions
//
// A session is a row of central.web_sessions found by the SHA-256 of a
// random 32-byte token the browser keeps in an HttpOnly, SameSite=Lax cookie
// (Secure when the request came over TLS). Sessions end when idle too long,
// at an absolute lifetime, at logout (the row is deleted, so the old cookie
// opens nothing) and when the user leaves the organization. The user's role
// is read from the membership on every request.
//
// # CSRF
//
// Every POST carries a hidden csrf_token field. Signed in, it is an HMAC of
// the session token (a synchronizer token that needs no storage); on the
// sign-up and log-in forms it is an HMAC of a random pre-session cookie
// (signed double submit). A POST without the right token, or with an Origin
// header naming another site, is refused with 403 and an HTML page.
package web

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/keys"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/sqlq"
	"github.com/bizmsg/platform/platform/usage"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// Defaults of Config.
const (
	// DefaultIdleTimeout ends a session nobody used for this long.
	DefaultIdleTimeout = 2 * time.Hour
	// DefaultMaxAge ends every session this long after sign-in.
	DefaultMaxAge = 12 * time.Hour
	// DefaultTouchInterval: a session's last_seen_at is written at most
	// once per interval, not on every request.
	DefaultTouchInterval = time.Minute
)

// Config configures the Dashboard.
type Config struct {
	// DB is the database (central.web_sessions and the session's user,
	// membership and organization), read and written through bun.
	// Required.
	DB *db.DB
	// Accounts signs people up and in (password check and login throttle)
	// and manages members. Required.
	Accounts *accounts.Service
	// Keys, Senders, Messages and Usage are the services both APIs use.
	// Required.
	Keys     *keys.Service
	Senders  *senders.Service
	Messages *messages.Service
	Usage    *usage.Service
	// Scheduled cancels scheduled messages (the message page's Cancel
	// button); *acceptance.Service is one. Nil: no button.
	Scheduled Canceler
	// Secret keys the CSRF tokens: at least 32 bytes, the same on every node
	// (the platform passes API_KEY_PEPPER; a key is derived from it).
	// Required.
	Secret []byte
	// Clock is the time source of session expiry. Default clock.Real{}.
	Clock clock.Clock
	// Logger receives failures. Default slog.Default().
	Logger *slog.Logger
	// IdleTimeout, MaxAge and TouchInterval bound sessions; defaults above.
	IdleTimeout   time.Duration
	MaxAge        time.Duration
	TouchInterval time.Duration
	// SecureCookies sets the Secure attribute on every cookie. Without it,
	// cookies are Secure when the request came over TLS or through a proxy
	// that says X-Forwarded-Proto: https.
	SecureCookies bool
}

// Canceler cancels a scheduled message (docs/api.md, §Scheduled sends).
type Canceler interface {
	Cancel(ctx context.Context, t db.Tenant, id int64) (messages.Message, error)
}

// Dashboard serves the dashboard's pages.
type Dashboard struct {
	cfg     Config
	q       *sqlq.Queries
	log     *slog.Logger
	clock   clock.Clock
	csrfKey []byte
	pages   map[string]*template.Template
	static  fs.FS
	version string
}

// New validates cfg, parses the embedded templates and returns a Dashboard.
func New(cfg Config) (*Dashboard, error) {
	switch {
	case cfg.DB == nil || cfg.DB.Bun == nil:
		return nil, errors.New("web: Config.DB is required")
	case cfg.Accounts == nil || cfg.Keys == nil || cfg.Senders == nil || cfg.Messages == nil || cfg.Usage == nil:
		return nil, errors.New("web: the central, keys, senders, messages and usage services are required")
	case len(cfg.Secret) < 32:
		return nil, errors.New("web: Config.Secret must be at least 32 bytes")
	}
	defaults.Clock(&cfg.Clock)
	defaults.Logger(&cfg.Logger)
	defaults.Positive(&cfg.IdleTimeout, DefaultIdleTimeout)
	defaults.Positive(&cfg.MaxAge, DefaultMaxAge)
	defaults.Positive(&cfg.TouchInterval, DefaultTouchInterval)
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	static, err := fs.Sub(staticFiles, "static")
	if err != nil {
		return nil, err
	}
	q, err := sqlq.Load(queries, "queries")
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	return &Dashboard{
		cfg:     cfg,
		q:       q,
		log:     cfg.Logger,
		clock:   cfg.Clock,
		csrfKey: deriveKey(cfg.Secret, "bizmsg-web-csrf"),
		pages:   pages,
		static:  static,
		version: staticVersion(static),
	}, nil
}

// Mount registers the dashboard's pages on r: the core's own and those of
// each page group (web/accesspages, web/campaignpages, web/optoutpages,
// web/templatepages, web/webhookpages), which come after the same session
// and CSRF checks.
// Its paths are outside /api and the operational endpoints (/healthz,
// /readyz, /metrics), so it shadows nothing; an unknown path still gets the
// engine's JSON 404.
//
//	GET  /                         overview (today, quota per sender, 30-day chart)
//	GET  /signup, POST /signup     create an organization and its owner
//	GET  /login,  POST /login      sign in
//	POST /logout                   end the session
//	GET  /senders, POST /senders   sender numbers; add one
//	POST /senders/:id/verify       enter the OTP
//	POST /senders/:id/resend       send a new OTP
//	POST /senders/:id/limit        daily limit (owners and admins)
//	GET  /messages                 history with the API's filters and paging
//	GET  /messages/:id             one message, with its delivery (attempts, why not yet sent)
//	POST /messages/:id/cancel      cancel a scheduled message
//	GET  /conversations/:id        one conversation's messages as a thread, both ways
//	GET  /start                    the organization's first send, as curl
//	GET  /static/*file             stylesheet and script
//
// The groups list their own routes: keys, members and audit
// (accesspages), /campaigns (campaignpages), /opt-outs (optoutpages),
// /templates (templatepages) and /webhooks (webhookpages).
func (d *Dashboard) Mount(r gin.IRouter, groups ...PageGroup) {
	g := r.Group("/", d.headers, d.checkOrigin)
	g.GET("/static/*file", d.serveStatic)

	// Signed out: the pre-session CSRF token guards the forms.
	FormPage(g, "/signup", d.signupPage, d.requirePreCSRF, d.signup)
	FormPage(g, "/login", d.loginPage, d.requirePreCSRF, d.login)

	// Signed in: the session's CSRF token guards every POST.
	s := g.Group("/", d.requireSession, d.requireCSRF)
	s.POST("/logout", d.logout)
	s.GET("/", d.overview)
	FormPage(s, "/senders", d.sendersPage, d.addSender)
	s.POST("/senders/:id/verify", d.verifySender)
	s.POST("/senders/:id/resend", d.resendOTP)
	s.POST("/senders/:id/limit", d.setLimit)
	s.GET("/messages", d.messagesPage)
	s.GET("/messages/:id", d.messagePage)
	s.POST("/messages/:id/cancel", d.cancelMessage)
	s.GET("/conversations/:id", d.conversationPage)
	s.GET("/start", d.startPage)
	for _, p := range groups {
		p.Mount(s)
	}
}
