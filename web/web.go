// Package web is the dashboard: server-rendered HTML pages, served by the
// same binary as the APIs, for the members of an organization. It signs
// people up and in, and lets them add and confirm sender numbers (the OTP is
// entered here, docs/api.md §Sender numbers), manage API keys ("Show key"
// with encrypted storage), read the message history and usage, manage
// members and webhook endpoints (with their delivery logs), write message
// templates (with a live preview) and follow their review, keep the
// opt-out list and its confirmation texts, read the audit log (owners and
// admins) and copy a first curl command.
//
// The pages are html/template files and one stylesheet and one small script
// embedded in the binary: no build step. Handlers are thin: they read a form,
// call the same services the APIs call (accounts.Service, keys.Service,
// senders.Service, messages.Service, usage.Service, webhooks.Service,
// templates.Service, consent.Service) and render the result, so no
// business rule lives here.
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
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/audit"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/consent"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/keys"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/templates"
	"github.com/bizmsg/platform/platform/usage"
	"github.com/bizmsg/platform/platform/webhooks"
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
	// Pool is the database (central.web_sessions and the session's user,
	// membership and organization). Required.
	Pool *pgxpool.Pool
	// Accounts signs people up and in (password check and login throttle)
	// and manages members. Required.
	Accounts *accounts.Service
	// Keys, Senders, Messages and Usage are the services both APIs use.
	// Required.
	Keys     *keys.Service
	Senders  *senders.Service
	Messages *messages.Service
	Usage    *usage.Service
	// Webhooks manages the organization's webhook endpoints and their
	// delivery logs (the Tenant API's /webhooks service). Required.
	Webhooks *webhooks.Service
	// Audit reads the audit log (the /audit page, owners and admins).
	// Required.
	Audit *audit.Service
	// Consent is the opt-out list and its confirmation texts (the Tenant
	// API's /opt-outs service). Required.
	Consent *consent.Service
	// Templates is the organization's message templates and their review
	// (the Tenant API's /templates service). Required.
	Templates *templates.Service
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

// Dashboard serves the dashboard's pages.
type Dashboard struct {
	cfg     Config
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
	case cfg.Pool == nil:
		return nil, errors.New("web: Config.Pool is required")
	case cfg.Accounts == nil || cfg.Keys == nil || cfg.Senders == nil || cfg.Messages == nil || cfg.Usage == nil || cfg.Audit == nil:
		return nil, errors.New("web: the central, keys, senders, messages, usage and audit services are required")
	case cfg.Webhooks == nil:
		return nil, errors.New("web: Config.Webhooks is required")
	case cfg.Consent == nil || cfg.Templates == nil:
		return nil, errors.New("web: Config.Consent and Config.Templates are required")
	case len(cfg.Secret) < 32:
		return nil, errors.New("web: Config.Secret must be at least 32 bytes")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
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
	return &Dashboard{
		cfg:     cfg,
		log:     cfg.Logger,
		clock:   cfg.Clock,
		csrfKey: deriveKey(cfg.Secret, "bizmsg-web-csrf"),
		pages:   pages,
		static:  static,
		version: staticVersion(static),
	}, nil
}

// Mount registers the dashboard's pages on r. Its paths are outside /api
// and the operational endpoints (/healthz, /readyz, /metrics), so it
// shadows nothing; an unknown path still gets the engine's JSON 404.
//
//	GET  /                         overview (today, quota per sender, 30-day chart)
//	GET  /signup, POST /signup     create an organization and its owner
//	GET  /login,  POST /login      sign in
//	POST /logout                   end the session
//	GET  /senders, POST /senders   sender numbers; add one
//	POST /senders/:id/verify       enter the OTP
//	POST /senders/:id/resend       send a new OTP
//	POST /senders/:id/limit        daily limit (owners and admins)
//	GET  /keys, POST /keys         API keys; create one (shown once)
//	POST /keys/:id/reveal          "Show key" (encrypted storage)
//	GET  /keys/:id/revoke, POST    confirm, revoke
//	GET  /messages                 history with the API's filters and paging
//	GET  /messages/:id             one message, with its delivery (attempts, why not yet sent)
//	GET  /conversations/:id        one conversation's messages as a thread, both ways
//	GET  /members, POST /members   members; add one with a role
//	GET  /members/:id/remove, POST confirm, remove
//	GET  /audit                    the audit log with the API's filters and paging (owners and admins)
//	GET  /start                    the organization's first send, as curl
//	GET  /webhooks, POST /webhooks endpoints; add one (its secret shown once; owners and admins)
//	GET  /webhooks/:id             one endpoint and its delivery log (?state=&event_type=&cursor=)
//	POST /webhooks/:id/rotate      new secret, shown once (owners and admins, as every POST below)
//	POST /webhooks/:id/enable, /disable
//	GET  /webhooks/:id/delete, POST confirm, delete
//	POST /webhooks/:id/deliveries/:delivery_id/redeliver
//	POST /webhooks/:id/deliveries/redeliver  every failed delivery since a time
//	GET  /templates                message templates (?status=&category=&name=&cursor=)
//	GET  /templates/new, POST /templates  the create form with a live preview; create (owners and admins)
//	GET  /templates/:id            one template: texts, examples, status, a rejection's reason
//	GET  /templates/:id/delete, POST  confirm, delete (owners and admins)
//	GET  /opt-outs                 the opt-out list (?phone=&source=&cursor=), reply texts
//	POST /opt-outs                 add a phone (owners and admins, as every POST below)
//	GET  /opt-outs/remove?phone=, POST /opt-outs/remove  confirm, remove (phone in the body)
//	POST /opt-outs/settings        the confirmation texts
//	GET  /static/*file             stylesheet and script
func (d *Dashboard) Mount(r gin.IRouter) {
	g := r.Group("/", d.headers, d.checkOrigin)
	g.GET("/static/*file", d.serveStatic)

	// Signed out: the pre-session CSRF token guards the forms.
	g.GET("/signup", d.signupPage)
	g.POST("/signup", d.requirePreCSRF, d.signup)
	g.GET("/login", d.loginPage)
	g.POST("/login", d.requirePreCSRF, d.login)

	// Signed in: the session's CSRF token guards every POST.
	s := g.Group("/", d.requireSession, d.requireCSRF)
	s.POST("/logout", d.logout)
	s.GET("/", d.overview)
	s.GET("/senders", d.sendersPage)
	s.POST("/senders", d.addSender)
	s.POST("/senders/:id/verify", d.verifySender)
	s.POST("/senders/:id/resend", d.resendOTP)
	s.POST("/senders/:id/limit", d.setLimit)
	s.GET("/keys", d.keysPage)
	s.POST("/keys", d.createKey)
	s.POST("/keys/:id/reveal", d.revealKey)
	s.GET("/keys/:id/revoke", d.revokeKeyPage)
	s.POST("/keys/:id/revoke", d.revokeKey)
	s.GET("/messages", d.messagesPage)
	s.GET("/messages/:id", d.messagePage)
	s.GET("/conversations/:id", d.conversationPage)
	s.GET("/members", d.membersPage)
	s.POST("/members", d.addMember)
	s.GET("/members/:id/remove", d.removeMemberPage)
	s.POST("/members/:id/remove", d.removeMember)
	s.GET("/audit", d.auditPage)
	s.GET("/start", d.startPage)
	s.GET("/webhooks", d.webhooksPage)
	s.POST("/webhooks", d.createWebhook)
	s.GET("/webhooks/:id", d.webhookPage)
	s.POST("/webhooks/:id/rotate", d.rotateWebhookSecret)
	s.POST("/webhooks/:id/enable", d.enableWebhook)
	s.POST("/webhooks/:id/disable", d.disableWebhook)
	s.GET("/webhooks/:id/delete", d.deleteWebhookPage)
	s.POST("/webhooks/:id/delete", d.deleteWebhook)
	s.POST("/webhooks/:id/deliveries/redeliver", d.redeliverFailedWebhooks)
	s.POST("/webhooks/:id/deliveries/:delivery_id/redeliver", d.redeliverWebhook)
	s.GET("/templates", d.templatesPage)
	s.GET("/templates/new", d.newTemplatePage)
	s.POST("/templates", d.createTemplate)
	s.GET("/templates/:id", d.templatePage)
	s.GET("/templates/:id/delete", d.deleteTemplatePage)
	s.POST("/templates/:id/delete", d.deleteTemplate)
	s.GET("/opt-outs", d.optOutsPage)
	s.POST("/opt-outs", d.addOptOut)
	s.GET("/opt-outs/remove", d.removeOptOutPage)
	s.POST("/opt-outs/remove", d.removeOptOut)
	s.POST("/opt-outs/settings", d.saveReplies)
}
