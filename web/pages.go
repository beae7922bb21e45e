package web

import (
	"context"
	"fmt"
	"html/template"
	"net/url"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/senders"
)

// This file is what the dashboard's page packages (web/accesspages,
// web/optoutpages, web/templatepages, web/webhookpages) use of the core:
// the page data, the session, rendering and the answers every page gives.
// Each name forwards to the core's own, so the core's pages read as before.

// PageGroup is a package of pages mounted on the signed-in routes: its
// GETs and POSTs come after the session and CSRF checks.
type PageGroup interface {
	Mount(signedIn gin.IRouter)
}

// FormPage registers a page whose form posts back to the page's own path:
// GET path renders the page, POST path submits its form (answering with a
// redirect, or the page again with the form's errors). The dashboard's
// lists with an add form and its confirmation pages are all this shape.
func FormPage(r gin.IRoutes, path string, page gin.HandlerFunc, submit ...gin.HandlerFunc) {
	r.GET(path, page)
	r.POST(path, submit...)
}

// SenderPhones maps the organization's sender numbers' ids to their
// phones, for pages that name the number of a message, a recipient or an
// opt-out.
func (d *Dashboard) SenderPhones(ctx context.Context, t db.Tenant) (map[int64]string, error) {
	list, err := d.cfg.Senders.List(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("list sender numbers: %w", err)
	}
	return phonesByID(list), nil
}

// phonesByID maps sender numbers' ids to their phones.
func phonesByID(list []senders.Sender) map[int64]string {
	out := make(map[int64]string, len(list))
	for _, sn := range list {
		out[sn.ID] = sn.Phone
	}
	return out
}

// SessionOf returns the request's session (set by the signed-in routes).
func SessionOf(c *gin.Context) *Session { return session(c) }

// Now is the dashboard's time.
func (d *Dashboard) Now() time.Time { return d.clock.Now() }

// Render writes page name with status 200.
func (d *Dashboard) Render(c *gin.Context, name string, data PageData) { d.render(c, name, data) }

// RenderStatus writes page name with the given status.
func (d *Dashboard) RenderStatus(c *gin.Context, status int, name string, data PageData) {
	d.renderStatus(c, status, name, data)
}

// Internal renders the error page of err (logged when unexpected).
func (d *Dashboard) Internal(c *gin.Context, err error) { d.internal(c, err) }

// PathID reads the :id path parameter of a page on one thing.
func (d *Dashboard) PathID(c *gin.Context, thing string) (int64, bool) { return d.pathID(c, thing) }

// FormStatus is the status of a form page that shows err.
func (d *Dashboard) FormStatus(c *gin.Context, err error, pd *PageData) (int, bool) {
	return d.formStatus(c, err, pd)
}

// ListError shows err, the error of reading a list whose filter form is
// filter, on page pd: a service's refusal marks filter's fields and, unless
// pd shows an error already, sets pd's error and *status. It answers 500
// and returns false when err is no refusal a form can show.
func (d *Dashboard) ListError(c *gin.Context, err error, pd, filter *PageData, status *int) bool {
	st, msg, fields, ok := formError(err)
	if !ok {
		d.internal(c, err)
		return false
	}
	filter.Fields = fields
	if pd.Error == "" {
		*status, pd.Error = st, msg
	}
	return true
}

// ClearCookie tells the browser to drop a cookie.
func (d *Dashboard) ClearCookie(c *gin.Context, name string) { d.clearCookie(c, name) }

// FormError splits a service error into what a form shows.
func FormError(err error) (status int, msg string, fields map[string][]string, ok bool) {
	return formError(err)
}

// ErrNotAdmin is the refusal of an action for owners and admins only.
func ErrNotAdmin(what string) error { return errNotAdmin(what) }

// RoundUp renders a wait for people.
func RoundUp(d time.Duration) string { return roundUp(d) }

// NewPager returns the paging of the list at path.
func NewPager(path string, q url.Values, cursor, next, fragment string) Pager {
	return newPager(path, q, cursor, next, fragment)
}

// ReadFilters reads a list page's filters from the query.
func ReadFilters(c *gin.Context, fields []string) (map[string]string, url.Values) {
	return readFilters(c, fields)
}

// Notice returns the success message the request's ?ok= asks for.
func Notice(c *gin.Context) string { return notice(c) }

// Redirect answers a successful form with 303 See Other to target.
func Redirect(c *gin.Context, target string) { redirect(c, target) }

// ParsePages parses every page with the layout (for page packages' tests).
func ParsePages() (map[string]*template.Template, error) { return parsePages() }

// RFC3339 completes a datetime-local filter value to RFC 3339.
func RFC3339(v string) string { return rfc3339(v) }
