package webhookpages

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/page"
	"github.com/bizmsg/platform/platform/webhooks"
	"github.com/bizmsg/platform/web"
)

// The webhooks pages manage the organization's webhook endpoints through
// webhooks.Service, the service of the Tenant API's /webhooks routes
// (docs/api.md, §Webhooks). Every member may read the endpoints and their
// delivery logs (no page ever shows a secret again); adding, rotating,
// enabling, disabling, deleting and redelivering are for owners and admins,
// as managing API keys is.

// webhookPageSize is how many deliveries the endpoint page shows at once.
const webhookPageSize = page.DefaultLimit

// eventText says when an event type is sent (docs/api.md, §Event types).
func eventText(typ string) string {
	switch typ {
	case webhooks.EventMessageSent:
		return "the network took a message"
	case webhooks.EventMessageDelivered:
		return "a message reached the recipient"
	case webhooks.EventMessageRead:
		return "the recipient read a message"
	case webhooks.EventMessageFailed:
		return "a message failed"
	case webhooks.EventMessageCanceled:
		return "a scheduled message was canceled before its release"
	case webhooks.EventMessageReceived:
		return "a message arrived for one of your sender numbers"
	case webhooks.EventSenderStatusChanged:
		return "a sender number changed status"
	case webhooks.EventAPIKeyExpiring:
		return "an API key is about to expire"
	case webhooks.EventContactOptedOut:
		return "someone opted out (a keyword, the API or the dashboard)"
	case webhooks.EventContactOptedIn:
		return "someone opted in again"
	case webhooks.EventTemplateStatus:
		return "the network approved, rejected, paused or disabled a template"
	case webhooks.EventCampaignStarted:
		return "a campaign started sending"
	case webhooks.EventCampaignCompleted:
		return "a campaign finished: every recipient released or skipped"
	}
	return typ
}

// webhookNotice is the success message of a webhook form's redirect
// (?ok=<code>): fixed texts, so the URL carries no content of its own.
func webhookNotice(code string) string {
	switch code {
	case "webhook_deleted":
		return "Webhook endpoint deleted, with its delivery log. Its pending deliveries are not sent."
	case "webhook_enabled":
		return "Endpoint enabled: new events are delivered to it again. Events it missed while disabled can be sent with “Redeliver failed”."
	case "webhook_disabled":
		return "Endpoint disabled: it gets no new deliveries, and its pending ones fail without a request."
	case "redelivered":
		return "Delivery queued again: it is at the top of the log, pending, with the same webhook-id and body."
	case "failed_redelivered":
		return "The failed deliveries since that time are queued again: they are at the top of the log, pending."
	case "nothing_to_redeliver":
		return "No failed delivery since that time was left to redeliver."
	}
	return ""
}

// endpointView is an endpoint as the pages show it.
type endpointView struct {
	webhooks.Endpoint
	// AllEvents: the endpoint is subscribed to every event type.
	AllEvents bool
}

func viewEndpoint(e webhooks.Endpoint) endpointView {
	return endpointView{Endpoint: e, AllEvents: len(e.Events) == len(webhooks.EventTypes())}
}

// webhooksData is the webhooks page's data.
type webhooksData struct {
	Endpoints []endpointView
	Events    []web.CheckItem
	// More: the organization has more endpoints than the page shows.
	More bool
}

// webhooksPage lists the organization's endpoints and, for owners and
// admins, the form that adds one.
func (d *Pages) webhooksPage(c *gin.Context) {
	d.renderWebhooks(c, http.StatusOK, web.PageData{Notice: webhookNotice(c.Query("ok"))}, webhooks.EventTypes())
}

// renderWebhooks renders the webhooks page with the event types checked
// ticked in the add form.
func (d *Pages) renderWebhooks(c *gin.Context, status int, data web.PageData, checked []string) {
	s := web.SessionOf(c)
	list, err := d.cfg.Webhooks.List(c.Request.Context(), s.Principal.Tenant, strconv.Itoa(page.MaxLimit), "")
	if err != nil {
		d.Internal(c, err)
		return
	}
	out := webhooksData{More: list.NextCursor != ""}
	for _, e := range list.Items {
		out.Endpoints = append(out.Endpoints, viewEndpoint(e))
	}
	out.Events = web.CheckItems(webhooks.EventTypes(), eventText, checked)
	data.Title, data.Nav, data.Data = "Webhooks", "webhooks", out
	d.RenderStatus(c, status, "webhooks", data)
}

// webhookSecretData is the data of the page that shows an endpoint's secret.
type webhookSecretData struct {
	Endpoint endpointView
	// Rotated: the secret replaces another, which still signs for Overlap.
	Rotated bool
	Overlap string
}

// createWebhook adds an endpoint through the webhook service (the same
// validation as POST /api/v1/webhooks) and shows its secret this once, in
// the response to the POST: never in a URL, never on a later page.
func (d *Pages) createWebhook(c *gin.Context) {
	s := web.SessionOf(c)
	if !s.IsAdmin() {
		d.Internal(c, web.ErrNotAdmin("add webhook endpoints"))
		return
	}
	rawURL, desc := c.PostForm("url"), c.PostForm("description")
	// Every checkbox unticked is an empty list, which the service refuses,
	// not "every type" as an absent list would be.
	events := c.PostFormArray("events")
	if events == nil {
		events = []string{}
	}
	e, err := d.cfg.Webhooks.Create(c.Request.Context(), s.Principal.Tenant,
		webhooks.EndpointInput{URL: &rawURL, Events: &events, Description: &desc})
	if err == nil {
		d.Render(c, "webhook_secret", web.PageData{Title: "Webhook endpoint added", Nav: "webhooks",
			Data: webhookSecretData{Endpoint: viewEndpoint(e)}})
		return
	}
	pd := web.PageData{Form: map[string]string{"url": rawURL, "description": desc}}
	if status, ok := d.FormStatus(c, err, &pd); ok {
		d.renderWebhooks(c, status, pd, events)
	}
}

// deliveryView is a delivery as the log shows it.
type deliveryView struct {
	webhooks.Delivery
	// Tone is the state badge's colour class.
	Tone string
}

// Status is the last answer's HTTP status, or "" when none came.
func (v deliveryView) Status() string {
	if v.LastStatusCode == nil {
		return ""
	}
	return strconv.Itoa(*v.LastStatusCode)
}

// Latency is how long the last attempt took, or "" when none was made.
func (v deliveryView) Latency() string {
	if v.LatencyMS == nil {
		return ""
	}
	return strconv.Itoa(*v.LatencyMS) + " ms"
}

// deliveryTone is the badge class of a delivery state.
func deliveryTone(state string) string {
	switch state {
	case webhooks.StateSucceeded:
		return "ok"
	case webhooks.StateFailed:
		return "bad"
	}
	return "warn"
}

// webhookData is the endpoint page's data.
type webhookData struct {
	Endpoint   endpointView
	Deliveries []deliveryView
	// States and Events are the log's filter options.
	States, Events []string
	// Pager pages the log, filtered by state or event type: older
	// deliveries next, the newest first.
	web.Pager
	// Overlap is how long a replaced secret still signs.
	Overlap string
}

// webhookPage is one endpoint: its settings, its actions and its delivery
// log, filtered as the API's (state, event type) and paged with its cursor.
func (d *Pages) webhookPage(c *gin.Context) {
	id, ok := d.PathID(c, "webhook endpoint")
	if !ok {
		return
	}
	d.renderWebhook(c, http.StatusOK, web.PageData{Notice: webhookNotice(c.Query("ok"))}, id, c.Request.URL.Query())
}

// renderWebhook renders endpoint id's page with the log filtered by q. A
// form error in data (of an action on the page) keeps its status; a bad
// filter is a 422 naming it.
func (d *Pages) renderWebhook(c *gin.Context, status int, data web.PageData, id int64, q url.Values) {
	s := web.SessionOf(c)
	ctx := c.Request.Context()
	e, err := d.cfg.Webhooks.Get(ctx, s.Principal.Tenant, id)
	if err != nil {
		d.Internal(c, err)
		return
	}
	if data.Form == nil {
		data.Form = map[string]string{}
	}
	// The log's filters are the query parameters of
	// GET /api/v1/webhooks/{id}/deliveries, with the same names.
	filters := url.Values{}
	for _, f := range []string{"state", "event_type"} {
		if v := strings.TrimSpace(q.Get(f)); v != "" {
			filters.Set(f, v)
			data.Form[f] = v
		}
	}
	if _, set := data.Form["since"]; !set {
		// Redeliver what failed in the last day, unless told otherwise.
		data.Form["since"] = d.Now().UTC().Add(-24 * time.Hour).Format("2006-01-02T15:04")
	}
	out := webhookData{
		Endpoint: viewEndpoint(e),
		States:   []string{webhooks.StatePending, webhooks.StateSucceeded, webhooks.StateFailed},
		Events:   webhooks.EventTypes(),
		Overlap:  hoursText(d.cfg.Webhooks.SecretOverlap()),
	}
	cursor := q.Get("cursor")
	log, err := d.cfg.Webhooks.Deliveries(ctx, s.Principal.Tenant, id, webhooks.DeliveryQuery{
		State: filters.Get("state"), EventType: filters.Get("event_type"), Limit: strconv.Itoa(webhookPageSize), Cursor: cursor})
	if err != nil {
		st, msg, fields, ok := web.FormError(err)
		if !ok || st == http.StatusNotFound {
			d.Internal(c, err)
			return
		}
		if data.Error == "" {
			status, data.Error, data.Fields = st, msg, fields
		}
	}
	for _, dl := range log.Items {
		out.Deliveries = append(out.Deliveries, deliveryView{Delivery: dl, Tone: deliveryTone(dl.State)})
	}
	out.Pager = web.NewPager("/webhooks/"+strconv.FormatInt(id, 10), filters, cursor, log.NextCursor, "#deliveries")
	data.Title, data.Nav, data.Data = "Webhook endpoint", "webhooks", out
	d.RenderStatus(c, status, "webhook", data)
}

// hoursText renders a duration of whole hours as people say it ("24
// hours"), anything else rounded up to seconds or minutes.
func hoursText(d time.Duration) string {
	switch {
	case d == time.Hour:
		return "1 hour"
	case d > time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	}
	return web.RoundUp(d)
}

// rotateWebhookSecret gives the endpoint a new secret and shows it this
// once; the previous one still signs for the overlap.
func (d *Pages) rotateWebhookSecret(c *gin.Context) {
	s, id, ok := d.AdminAction(c, "webhook endpoint", "rotate webhook secrets")
	if !ok {
		return
	}
	e, err := d.cfg.Webhooks.RotateSecret(c.Request.Context(), s.Principal.Tenant, id)
	if err != nil {
		d.Internal(c, err)
		return
	}
	d.Render(c, "webhook_secret", web.PageData{Title: "Webhook secret rotated", Nav: "webhooks",
		Data: webhookSecretData{Endpoint: viewEndpoint(e), Rotated: true, Overlap: hoursText(d.cfg.Webhooks.SecretOverlap())}})
}

// enableWebhook re-enables a disabled endpoint (clearing its reason and
// failure streak).
func (d *Pages) enableWebhook(c *gin.Context) { d.setWebhookEnabled(c, true) }

// disableWebhook disables an endpoint by request.
func (d *Pages) disableWebhook(c *gin.Context) { d.setWebhookEnabled(c, false) }

func (d *Pages) setWebhookEnabled(c *gin.Context, enabled bool) {
	what, code := "disable webhook endpoints", "webhook_disabled"
	if enabled {
		what, code = "enable webhook endpoints", "webhook_enabled"
	}
	s, id, ok := d.AdminAction(c, "webhook endpoint", what)
	if !ok {
		return
	}
	if _, err := d.cfg.Webhooks.Update(c.Request.Context(), s.Principal.Tenant, id, webhooks.EndpointPatch{Enabled: &enabled}); err != nil {
		d.Internal(c, err)
		return
	}
	web.Redirect(c, "/webhooks/"+strconv.FormatInt(id, 10)+"?ok="+code)
}

// deleteWebhookPage asks for confirmation before deleting an endpoint.
func (d *Pages) deleteWebhookPage(c *gin.Context) {
	s, id, ok := d.AdminAction(c, "webhook endpoint", "delete webhook endpoints")
	if !ok {
		return
	}
	e, err := d.cfg.Webhooks.Get(c.Request.Context(), s.Principal.Tenant, id)
	if err != nil {
		d.Internal(c, err)
		return
	}
	d.Render(c, "webhook_delete", web.PageData{Title: "Delete webhook endpoint", Nav: "webhooks", Data: viewEndpoint(e)})
}

// deleteWebhook deletes an endpoint and its delivery log.
func (d *Pages) deleteWebhook(c *gin.Context) {
	s, id, ok := d.AdminAction(c, "webhook endpoint", "delete webhook endpoints")
	if !ok {
		return
	}
	if err := d.cfg.Webhooks.Delete(c.Request.Context(), s.Principal.Tenant, id); err != nil {
		d.Internal(c, err)
		return
	}
	web.Redirect(c, "/webhooks?ok=webhook_deleted")
}

// redeliverWebhook sends one delivery's event to the endpoint again, as a
// new delivery.
func (d *Pages) redeliverWebhook(c *gin.Context) {
	s, id, ok := d.AdminAction(c, "webhook endpoint", "redeliver webhooks")
	if !ok {
		return
	}
	deliveryID, ok := httpx.ParseID(c.Param("delivery_id"))
	if !ok {
		d.Internal(c, apperr.NotFound("webhook delivery"))
		return
	}
	if _, err := d.cfg.Webhooks.Redeliver(c.Request.Context(), s.Principal.Tenant, id, deliveryID); err != nil {
		d.webhookActionFailed(c, id, err, nil)
		return
	}
	web.Redirect(c, "/webhooks/"+strconv.FormatInt(id, 10)+"?ok=redelivered#deliveries")
}

// redeliverFailedWebhooks redelivers every event whose latest delivery to
// the endpoint failed since the time given (a datetime-local value, UTC).
func (d *Pages) redeliverFailedWebhooks(c *gin.Context) {
	s, id, ok := d.AdminAction(c, "webhook endpoint", "redeliver webhooks")
	if !ok {
		return
	}
	raw := strings.TrimSpace(c.PostForm("since"))
	form := map[string]string{"since": raw}
	var v apperr.Validation
	var since time.Time
	if raw == "" {
		v.Add("since", "is required")
	} else {
		t, err := time.Parse(time.RFC3339Nano, web.RFC3339(raw))
		if err != nil {
			v.Add("since", "must be a date and time such as 2026-11-22T14:03 (UTC)")
		}
		since = t
	}
	err := v.Err()
	n := 0
	if err == nil {
		n, err = d.cfg.Webhooks.RedeliverFailed(c.Request.Context(), s.Principal.Tenant, id, since)
	}
	if err != nil {
		d.webhookActionFailed(c, id, err, form)
		return
	}
	code := "failed_redelivered"
	if n == 0 {
		code = "nothing_to_redeliver"
	}
	web.Redirect(c, "/webhooks/"+strconv.FormatInt(id, 10)+"?ok="+code+"#deliveries")
}

// webhookActionFailed answers a failed action of the endpoint page: the
// page again with the error next to its forms (a 422 such as a disabled
// endpoint), or the error page (404, internal failures).
func (d *Pages) webhookActionFailed(c *gin.Context, id int64, err error, form map[string]string) {
	status, msg, fields, ok := web.FormError(err)
	if !ok || status == http.StatusNotFound {
		d.Internal(c, err)
		return
	}
	d.renderWebhook(c, status, web.PageData{Error: msg, Fields: fields, Form: form}, id, url.Values{})
}
