package campaignpages

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/campaigns"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/page"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/sendrequest"
	"github.com/bizmsg/platform/platform/templates"
	"github.com/bizmsg/platform/web"
)

// The campaign pages manage the organization's campaigns through
// campaigns.Service, the service of the Tenant API's /campaigns routes
// (docs/api.md, §Campaigns). Every member may read the campaigns, their
// progress and recipients; creating, adding recipients, starting,
// pausing, resuming and canceling are for owners and admins, as managing
// templates is (the API guards the same with the campaigns.manage scope).
//
// The new-campaign form becomes the API's request body, decoded by the
// service's own CreateRequest, so every field is judged by the API's
// rules and its errors land on the form's fields of the same names.

// campaignFilterFields are the list's filters: the query parameters of
// GET /api/v1/campaigns, with the same names.
var campaignFilterFields = []string{"status"}

// Kinds of campaign content on the form.
const (
	kindTemplate = "template"
	kindText     = "text"
)

// campaignNotice is the success message of a campaign form's redirect
// (?ok=<code>): fixed texts, so the URL carries no content of its own.
func campaignNotice(code string) string {
	switch code {
	case "campaign_created":
		return "Campaign created as a draft. Add its recipients from a CSV file below, then start it."
	case "campaign_created_recipients":
		return "Campaign created as a draft with its recipients: every row was added. Start it when you are ready."
	case "recipients_added":
		return "Recipients added: every row was added."
	case "campaign_started":
		return "Campaign started: its recipients are being released, paced by each sender number's throttle and daily limit."
	case "campaign_scheduled":
		return "Campaign scheduled: it starts by itself at its send time."
	case "campaign_paused":
		return "Campaign paused: no more recipients are released until you resume it. Messages already queued still go."
	case "campaign_resumed":
		return "Campaign resumed."
	case "campaign_canceled":
		return "Campaign canceled: its pending recipients were skipped. Messages already queued still go."
	}
	return ""
}

// campaignsData is the list's data.
type campaignsData struct {
	Campaigns []campaignView
	Statuses  []string
	web.Pager
}

// campaignsPage lists the organization's campaigns, newest first, with
// their progress, filtered and paged as the API's.
func (d *Pages) campaignsPage(c *gin.Context) {
	s := web.SessionOf(c)
	form, q := web.ReadFilters(c, campaignFilterFields)
	pd := web.PageData{Title: "Campaigns", Nav: "campaigns", Form: form, Notice: campaignNotice(c.Query("ok"))}
	cursor := c.Query("cursor")
	list, err := d.cfg.Campaigns.List(c.Request.Context(), s.Principal.Tenant, campaigns.ListQuery{
		Status: q.Get("status"), Limit: strconv.Itoa(page.DefaultLimit), Cursor: cursor})
	status, ok := d.FormStatus(c, err, &pd)
	if !ok {
		return
	}
	data := campaignsData{}
	for _, st := range campaigns.Statuses() {
		data.Statuses = append(data.Statuses, string(st))
	}
	for _, camp := range list.Items {
		data.Campaigns = append(data.Campaigns, viewCampaign(camp, nil))
	}
	data.Pager = web.NewPager("/campaigns", q, cursor, list.NextCursor, "")
	pd.Data = data
	d.RenderStatus(c, status, "campaigns", pd)
}

// senderOption is a sender number the form offers.
type senderOption struct {
	senders.Sender
	Checked bool
}

// templateOption is an approved template the form offers.
type templateOption struct {
	templates.Template
	Selected bool
}

// newCampaignData is the new-campaign form's data.
type newCampaignData struct {
	// Senders are the organization's active numbers; Templates its
	// approved templates.
	Senders   []senderOption
	Templates []templateOption
	// Kind is the content chosen: template or text.
	Kind string
	// Limits, for the fields' attributes.
	MaxName, MaxContent, MaxSenders, DefaultReserve int
	// FileLost: the form failed after a file was chosen, which the
	// browser does not keep.
	FileLost bool
}

// newCampaignPage is the new-campaign form.
func (d *Pages) newCampaignPage(c *gin.Context) {
	if _, ok := d.RequireAdmin(c, "create campaigns"); !ok {
		return
	}
	d.renderNewCampaign(c, http.StatusOK, web.PageData{Form: map[string]string{
		"reserve_percent": strconv.Itoa(campaigns.DefaultReservePercent)}}, nil, false)
}

// renderNewCampaign renders the form with the senders of checked ticked.
func (d *Pages) renderNewCampaign(c *gin.Context, status int, pd web.PageData, checked []string, fileLost bool) {
	s := web.SessionOf(c)
	ctx := c.Request.Context()
	list, err := d.cfg.Senders.List(ctx, s.Principal.Tenant)
	if err != nil {
		d.Internal(c, err)
		return
	}
	approved, err := d.approvedTemplates(ctx, s.Principal.Tenant)
	if err != nil {
		d.Internal(c, err)
		return
	}
	data := newCampaignData{Kind: pd.Value("kind"), MaxName: campaigns.MaxNameLength, MaxContent: sendrequest.MaxTextLength,
		MaxSenders: campaigns.MaxSenders, DefaultReserve: campaigns.DefaultReservePercent, FileLost: fileLost}
	for _, sn := range list {
		if sn.Status != senders.StatusActive {
			continue
		}
		id := strconv.FormatInt(sn.ID, 10)
		on := false
		for _, v := range checked {
			on = on || v == id
		}
		data.Senders = append(data.Senders, senderOption{Sender: sn, Checked: on})
	}
	for _, t := range approved {
		data.Templates = append(data.Templates, templateOption{Template: t,
			Selected: pd.Value("template_id") == strconv.FormatInt(t.ID, 10)})
	}
	if data.Kind != kindTemplate && data.Kind != kindText {
		data.Kind = kindText
		if len(data.Templates) > 0 {
			data.Kind = kindTemplate
		}
	}
	pd.Title, pd.Nav, pd.Data = "New campaign", "campaigns", data
	d.RenderStatus(c, status, "campaign_new", pd)
}

// maxTemplatePages bounds how many pages of approved templates the form
// reads (page.MaxLimit each).
const maxTemplatePages = 20

// approvedTemplates returns the organization's approved templates, newest
// first.
func (d *Pages) approvedTemplates(ctx context.Context, t db.Tenant) ([]templates.Template, error) {
	var out []templates.Template
	cursor := ""
	for range maxTemplatePages {
		list, err := d.cfg.Templates.List(ctx, t, templates.ListQuery{Status: string(templates.StatusApproved),
			Limit: strconv.Itoa(page.MaxLimit), Cursor: cursor})
		if err != nil {
			return nil, fmt.Errorf("approved templates: %w", err)
		}
		out = append(out, list.Items...)
		if list.NextCursor == "" {
			break
		}
		cursor = list.NextCursor
	}
	return out, nil
}

// createCampaign creates the campaign of the form (the service's
// validation, as POST /api/v1/campaigns) and, when a CSV of recipients
// came with it, adds them (as POST /api/v1/campaigns/{id}/recipients).
// A campaign created with every row added, or without a file, opens its
// page; otherwise its page is the answer to this POST, with the rows that
// were not added (or why the file could not be read).
func (d *Pages) createCampaign(c *gin.Context) {
	s, ok := d.RequireAdmin(c, "create campaigns")
	if !ok {
		return
	}
	ctx := c.Request.Context()
	csv, fileGiven, csvErr := readCSV(c)
	form := map[string]string{}
	for _, f := range []string{"name", "kind", "template_id", "content", "send_at", "reserve_percent", "recipients_csv"} {
		form[f] = c.PostForm(f)
	}
	checked := c.PostFormArray("sender_number_ids")
	pd := web.PageData{Form: form}
	// A file that cannot be read (or a file and rows at once) is refused
	// before anything is created.
	err := csvErr
	var req *campaigns.CreateRequest
	if err == nil {
		req, err = d.createRequest(ctx, s.Principal.Tenant, form, checked)
	}
	var camp campaigns.Campaign
	if err == nil {
		camp, err = d.cfg.Campaigns.Create(ctx, s.Principal.Tenant, req)
	}
	if err != nil {
		status, ok := d.FormStatus(c, err, &pd)
		if !ok {
			return
		}
		if _, missing := pd.Fields["template"]; missing && form["kind"] == kindTemplate {
			pd.Fields["template"] = []string{"choose one of the approved templates"}
		}
		d.renderNewCampaign(c, status, pd, checked, fileGiven)
		return
	}
	if csv == nil {
		web.Redirect(c, "/campaigns/"+strconv.FormatInt(camp.ID, 10)+"?ok=campaign_created")
		return
	}
	d.finishUpload(c, camp.ID, csv, nil, "campaign_created_recipients", "Campaign created as a draft.")
}

// createRequest is the form as the API's request body, decoded by the
// service's CreateRequest: a value of the wrong kind (reserve_percent
// "ten", a sender id that is not a number) is reported by the service
// with the API's message, with every other field's.
func (d *Pages) createRequest(ctx context.Context, t db.Tenant, form map[string]string, checked []string) (*campaigns.CreateRequest, error) {
	body := map[string]any{"name": form["name"]}
	if len(checked) > 0 {
		ids := make([]any, len(checked))
		for i, v := range checked {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				ids[i] = n
			} else {
				ids[i] = v
			}
		}
		body["sender_number_ids"] = ids
	}
	switch form["kind"] {
	case kindTemplate:
		body["type"] = messages.TypeTemplate
		if tpl, ok := d.chosenTemplate(ctx, t, form["template_id"]); ok {
			body["template"] = map[string]string{"name": tpl.Name, "language": tpl.Language}
		}
	default:
		body["type"], body["content"] = messages.TypeText, form["content"]
	}
	if v := strings.TrimSpace(form["send_at"]); v != "" {
		body["send_at"] = web.RFC3339(v)
	}
	if v := strings.TrimSpace(form["reserve_percent"]); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			body["reserve_percent"] = n
		} else {
			body["reserve_percent"] = v
		}
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("campaign form: %w", err)
	}
	var req campaigns.CreateRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, fmt.Errorf("campaign form: %w", err)
	}
	return &req, nil
}

// chosenTemplate is the template the form's menu chose (by id), if the
// organization has it.
func (d *Pages) chosenTemplate(ctx context.Context, t db.Tenant, id string) (templates.Template, bool) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return templates.Template{}, false
	}
	tpl, err := d.cfg.Templates.Get(ctx, t, n)
	return tpl, err == nil
}
