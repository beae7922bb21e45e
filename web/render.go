package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/messages"
)

// pageNames are the templates under templates/, each rendered inside
// layout.html with the partials of partials.html.
var pageNames = []string{
	"error", "login", "signup", "overview", "senders", "keys", "key_secret", "key_revoke",
	"messages", "message", "conversation", "members", "member_remove", "start", "audit",
	"webhooks", "webhook", "webhook_secret", "webhook_delete", "optouts", "optout_remove",
	"templates_list", "template_new", "template_detail", "template_delete",
	"campaigns", "campaign_new", "campaign", "campaign_cancel",
}

// PageData is what every page template receives.
type PageData struct {
	// Title is the page's <title> and heading.
	Title string
	// Nav names the active navigation entry.
	Nav string
	// Session is the signed-in user; nil on the signed-out pages.
	Session *Session
	// CSRF is the token of the page's forms.
	CSRF string
	// Notice is a success message (role=status); Error a failure of the
	// page's form (role=alert), with field errors in Fields.
	Notice string
	Error  string
	Fields map[string][]string
	// Form holds the values to put back into a form after an error.
	Form map[string]string
	// Message is the body of the error page.
	Message string
	// RequestID identifies the request in the logs (error pages).
	RequestID string
	// Static is the version suffix of the static files' URLs.
	Static string
	// Refresh, when positive, reloads the page every Refresh seconds at
	// RefreshURL (a meta refresh: a live page without script).
	Refresh    int
	RefreshURL string
	// Data is the page's own data.
	Data any
}

// pageData is the core's own name of PageData.
type pageData = PageData

// FieldError returns the errors of a form field, joined, or "".
func (p PageData) FieldError(field string) string {
	return strings.Join(p.Fields[field], "; ")
}

// Value returns a form value to put back after an error.
func (p PageData) Value(field string) string { return p.Form[field] }

var funcs = template.FuncMap{
	"datetime": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			return v.UTC().Format("2006-01-02 15:04 UTC")
		case *time.Time:
			if v == nil {
				return ""
			}
			return v.UTC().Format("2006-01-02 15:04 UTC")
		}
		return ""
	},
	"eq2": func(a, b any) bool { return fmt.Sprint(a) == fmt.Sprint(b) },
	// statusClass is a message status's badge class.
	"statusClass": statusClass,
	// args is the argument of a partial (templates/partials.html): names
	// and values in turn, {{template "pager" (args "List" .Data ...)}}.
	"args": args,
	// list makes a list of its arguments, for a partial's argument:
	// (args "Columns" (list "Name" "Email")).
	"list": func(s ...string) []string { return s },
}

// args makes a map of names and values given in turn.
func args(kv ...any) (map[string]any, error) {
	if len(kv)%2 != 0 {
		return nil, fmt.Errorf("args: %d arguments, not names and values in pairs", len(kv))
	}
	m := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		name, ok := kv[i].(string)
		if !ok {
			return nil, fmt.Errorf("args: name %v is not a string", kv[i])
		}
		m[name] = kv[i+1]
	}
	return m, nil
}

// CheckItem is a checkbox of the "checks" partial (a key's scopes, an
// endpoint's event types).
type CheckItem struct {
	Value, Help string
	Checked     bool
}

// CheckItems returns a checkbox for each of values, with its help text,
// ticked when checked holds it.
func CheckItems(values []string, help func(string) string, checked []string) []CheckItem {
	out := make([]CheckItem, 0, len(values))
	for _, v := range values {
		out = append(out, CheckItem{Value: v, Help: help(v), Checked: slices.Contains(checked, v)})
	}
	return out
}

// statusClass is the badge class of a message status (or a campaign
// recipient's): done well (delivered, read), failed, on its way (sent) or
// in (received), never to be sent (canceled, skipped), or waiting
// (queued, pending).
func statusClass(status string) string {
	switch status {
	case messages.StatusDelivered, messages.StatusRead:
		return "ok"
	case messages.StatusFailed:
		return "bad"
	case messages.StatusSent, messages.StatusReceived:
		return "info"
	case messages.StatusCanceled, "skipped":
		// A scheduled send canceled, a campaign's recipient skipped: no
		// message went, and none will.
		return "off"
	}
	return "warn"
}

// parsePages parses every page with the layout.
func parsePages() (map[string]*template.Template, error) {
	out := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/partials.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("web: parse template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// staticVersion is a digest of the static files, appended to their URLs so
// that a new binary's files are not hidden by a browser cache.
func staticVersion(files fs.FS) string {
	h := sha256.New()
	_ = fs.WalkDir(files, ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := fs.ReadFile(files, p)
		if err != nil {
			return err
		}
		h.Write([]byte(p))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// headers sets the security headers of every dashboard response: a strict
// content security policy (scripts and styles only from /static, no
// framing, forms only to this site), no MIME sniffing, no referrer to other
// sites (same-origin: with no-referrer, browsers send "Origin: null" on
// form posts, which would blind checkOrigin), and no caching of pages.
func (d *Dashboard) headers(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	c.Next()
}

// serveStatic serves the embedded stylesheet and script.
func (d *Dashboard) serveStatic(c *gin.Context) {
	name := strings.TrimPrefix(path.Clean(c.Param("file")), "/")
	info, err := fs.Stat(d.static, name)
	if err != nil || info.IsDir() || name == "." {
		d.renderStatus(c, http.StatusNotFound, "error", pageData{Title: "Not found", Message: "There is no such file."})
		return
	}
	c.Header("Cache-Control", "public, max-age=86400")
	c.FileFromFS(name, http.FS(d.static))
}

// render writes page name with status 200.
func (d *Dashboard) render(c *gin.Context, name string, data pageData) {
	d.renderStatus(c, http.StatusOK, name, data)
}

// renderStatus writes page name with the given status. The signed-in
// session, its CSRF token and the request id are filled in.
func (d *Dashboard) renderStatus(c *gin.Context, status int, name string, data pageData) {
	if v, ok := c.Get(sessionKey); ok && data.Session == nil {
		data.Session, _ = v.(*Session)
	}
	if data.Session != nil && data.CSRF == "" {
		data.CSRF = data.Session.CSRF
	}
	data.RequestID = httpx.RequestID(c)
	data.Static = d.version
	t, ok := d.pages[name]
	if !ok {
		d.log.ErrorContext(c.Request.Context(), "web: unknown page", "page", name)
		c.String(http.StatusInternalServerError, "Internal server error.")
		return
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		d.log.ErrorContext(c.Request.Context(), "web: render failed", "page", name, "error", err,
			"request_id", data.RequestID)
		c.String(http.StatusInternalServerError, "Internal server error.")
		return
	}
	c.Data(status, "text/html; charset=utf-8", buf.Bytes())
}

// internal logs an unexpected failure and renders a generic error page.
func (d *Dashboard) internal(c *gin.Context, err error) {
	e := apperr.Wrap(err, apperr.KindInternal, "", "")
	if u, ok := apperr.As(err); ok {
		e = u
	}
	status := httpx.StatusOf(e.Kind)
	msg := e.Message
	if e.Kind == apperr.KindInternal {
		msg = "Something went wrong on our side. Try again; if it keeps happening, quote the request id below."
		d.log.ErrorContext(c.Request.Context(), "web: request failed", "error", err,
			"request_id", httpx.RequestID(c), "route", c.FullPath())
	}
	if e.Kind == apperr.KindUnavailable {
		d.log.WarnContext(c.Request.Context(), "web: dependency unavailable", "error", err,
			"request_id", httpx.RequestID(c), "route", c.FullPath())
	}
	title := http.StatusText(status)
	if e.Kind == apperr.KindNotFound {
		title = "Not found"
	}
	d.renderStatus(c, status, "error", pageData{Title: title, Message: msg})
}

// pathID reads the :id path parameter of a page on one thing (named in the
// 404); when it is not an id it renders the error page and returns false.
func (d *Dashboard) pathID(c *gin.Context, thing string) (int64, bool) {
	id, ok := httpx.PathID(c)
	if !ok {
		d.internal(c, apperr.NotFound(thing))
	}
	return id, ok
}

// AdminAction reads the id of an owner/admin action on one thing (what it
// does, for the refusal). When the id is malformed or the member is not an
// owner or admin it renders the error page and returns ok false.
func (d *Dashboard) AdminAction(c *gin.Context, thing, what string) (*Session, int64, bool) {
	s := session(c)
	id, ok := d.pathID(c, thing)
	if !ok {
		return nil, 0, false
	}
	if !s.IsAdmin() {
		d.internal(c, errNotAdmin(what))
		return nil, 0, false
	}
	return s, id, true
}

// RequireAdmin renders the refusal of what (an action for owners and
// admins) and returns false when the member is neither.
func (d *Dashboard) RequireAdmin(c *gin.Context, what string) (*Session, bool) {
	s := session(c)
	if !s.IsAdmin() {
		d.internal(c, errNotAdmin(what))
		return nil, false
	}
	return s, true
}

// errNotAdmin is the refusal of an action for owners and admins only (the
// Central API's RequireRole(owner, admin) on the same actions).
func errNotAdmin(what string) error {
	return apperr.Forbidden("insufficient_role", "Only owners and admins can "+what+".")
}

// formStatus is the status of a form page that shows err, the outcome of
// the form's service call: 200 without one; for a failure of the user's
// (formError), its status, and pd takes its message and field errors. Any
// other failure gets the error page, and ok is false: the caller answers
// nothing more.
func (d *Dashboard) formStatus(c *gin.Context, err error, pd *pageData) (status int, ok bool) {
	if err == nil {
		return http.StatusOK, true
	}
	status, msg, fields, ok := formError(err)
	if !ok {
		d.internal(c, err)
		return 0, false
	}
	pd.Error, pd.Fields = msg, fields
	return status, true
}

// formError splits a service error into what a form shows (its status, a
// message and field errors). ok is false for failures that are not the
// user's (internal or unavailable): those get the error page.
func formError(err error) (status int, msg string, fields map[string][]string, ok bool) {
	e, isApp := apperr.As(err)
	if !isApp || e.Kind == apperr.KindInternal || e.Kind == apperr.KindUnavailable {
		return 0, "", nil, false
	}
	msg = e.Message
	if len(e.Fields) > 0 {
		msg = "Please correct the fields marked below."
	}
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (Try again in %s.)", roundUp(e.RetryAfter))
	}
	return httpx.StatusOf(e.Kind), msg, e.Fields, true
}

// roundUp renders a wait for people: whole seconds or minutes, rounded up.
func roundUp(d time.Duration) string {
	if d <= time.Minute {
		s := int((d + time.Second - 1) / time.Second)
		if s == 1 {
			return "1 second"
		}
		return fmt.Sprintf("%d seconds", s)
	}
	m := int((d + time.Minute - 1) / time.Minute)
	return fmt.Sprintf("%d minutes", m)
}

// notices are the success messages a redirect may ask for (?ok=<code>):
// fixed texts, so the URL carries no content of its own.
var notices = map[string]string{
	"welcome":          "Welcome! Your organization is ready. Add a sender number to start.",
	"sender_added":     "Sender number added. A 6-digit code is on its way to that number's account on the messaging network: enter it below.",
	"otp_resent":       "A new code is on its way. The previous code no longer works.",
	"sender_active":    "Code accepted: the sender number is active and ready to send.",
	"sender_pending":   "Code accepted. The number's owner must now verify their account on the messaging network; the number becomes active by itself when they have.",
	"limit_saved":      "Daily limit saved.",
	"key_revoked":      "API key revoked. Requests with it are refused from now on.",
	"member_added":     "Member added. Give them their email and initial password; they can log in now.",
	"member_removed":   "Member removed. Their sessions have ended.",
	"signed_out":       "You are logged out.",
	"message_canceled": "Scheduled message canceled: it will not be sent.",
}

// notice returns the success message the request's ?ok= asks for.
func notice(c *gin.Context) string { return notices[c.Query("ok")] }

// redirect answers a successful form with 303 See Other to target.
func redirect(c *gin.Context, target string) {
	c.Redirect(http.StatusSeeOther, target)
}
