package campaignpages

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/campaignrelease"
	"github.com/bizmsg/platform/platform/campaigns"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/page"
	"github.com/bizmsg/platform/web"
)

// refreshSeconds is how often a live campaign's page reloads itself (a
// meta refresh: no script, and nothing the content security policy
// refuses).
const refreshSeconds = 5

// maxInvalidShown bounds the invalid rows an upload's answer lists; the
// rest are counted.
const maxInvalidShown = 200

// csvMediaType is the media type the recipients of a form are read as.
const csvMediaType = "text/csv"

// recipientView is a recipient as the campaign page lists it.
type recipientView struct {
	campaigns.Recipient
	// SenderPhone is the phone of the number it was released through.
	SenderPhone string
	// Reason is a skipped recipient's skip reason (as skip_reasons
	// names it).
	Reason string
}

// uploadView is the outcome of adding recipients, shown in the answer to
// the form that added them.
type uploadView struct {
	campaigns.Added
	// Shown are the invalid rows listed, More how many others there are.
	Shown []campaigns.Invalid
	More  int
}

// campaignData is the campaign page's data.
type campaignData struct {
	Campaign campaignView
	// Recipients are this page of recipients; Filter holds the status
	// filter's value and error, apart from the page's forms.
	Recipients []recipientView
	Statuses   []string
	Filter     web.PageData
	// Upload is the outcome of the recipients just added (nil on a GET).
	Upload *uploadView
	// MaxRows and MaxSize bound one upload.
	MaxRows int
	MaxSize string
	// Address is the page's own URL when the page answers a POST: the
	// browser (app.js) shows it, so a reload does not post again.
	Address string
	// Live: the page reloads itself; RefreshOff and RefreshOn are the
	// links that stop and restart that.
	Live                  bool
	RefreshOff, RefreshOn string
	// MessagesURL is the history filtered to the campaign's messages.
	MessagesURL string
	// Pace is what a started campaign waits for and its pool's room
	// (nil for a draft, a finished campaign, or without Config.Release).
	Pace *paceView
	web.Pager
}

// paceView is the release's explanation as the page shows it.
type paceView struct {
	campaignrelease.Explanation
	// Senders are the pool's numbers, each with its phone.
	Senders []paceSender
}

// paceSender is one number of a campaign's pool as the page shows it.
type paceSender struct {
	campaignrelease.Sender
	Phone string
}

// Reason says why a number gives no room, for people.
func (s paceSender) Reason() string {
	switch s.Why {
	case campaignrelease.WhyInactive:
		return "not active: left out of the pool"
	case campaignrelease.WhyReserve:
		return "at the campaign's reserve of its daily limit: back the next UTC day"
	case campaignrelease.WhyInFlight:
		return "its throttle's second is full of queued messages"
	}
	return s.Why
}

// explain is the pace of started campaign v (nil when v is a draft or
// over, or the pages have no Release).
func (d *Pages) explain(ctx context.Context, t db.Tenant, v campaignView, phones map[int64]string) (*paceView, error) {
	if d.cfg.Release == nil || v.Status == campaigns.StatusDraft || v.Status == campaigns.StatusCompleted ||
		v.Status == campaigns.StatusCanceled {
		return nil, nil
	}
	x, err := d.cfg.Release.Explain(ctx, t, v.ID)
	if err != nil {
		return nil, err
	}
	out := &paceView{Explanation: x}
	for _, sn := range x.Senders {
		out.Senders = append(out.Senders, paceSender{Sender: sn, Phone: phones[sn.ID]})
	}
	return out, nil
}

// campaignPage is one campaign: its fields, progress, the actions its
// state allows, more recipients while a draft, and its recipients.
func (d *Pages) campaignPage(c *gin.Context) {
	id, ok := d.PathID(c, "campaign")
	if !ok {
		return
	}
	d.renderCampaign(c, http.StatusOK, web.PageData{Notice: campaignNotice(c.Query("ok"))}, id, nil)
}

// renderCampaign renders campaign id's page with the recipients the
// request's query asks for (status, cursor) and upload's outcome.
func (d *Pages) renderCampaign(c *gin.Context, status int, pd web.PageData, id int64, upload *uploadView) {
	s := web.SessionOf(c)
	ctx := c.Request.Context()
	camp, err := d.cfg.Campaigns.Get(ctx, s.Principal.Tenant, id)
	if err != nil {
		d.Internal(c, err)
		return
	}
	phones, err := d.SenderPhones(ctx, s.Principal.Tenant)
	if err != nil {
		d.Internal(c, err)
		return
	}
	base := "/campaigns/" + strconv.FormatInt(id, 10)
	view := viewCampaign(camp, phones)
	pace, err := d.explain(ctx, s.Principal.Tenant, view, phones)
	if err != nil {
		d.Internal(c, err)
		return
	}
	data := campaignData{Pace: pace,
		Campaign: view, Statuses: campaigns.RecipientStatuses(),
		Filter: web.PageData{Form: map[string]string{}}, Upload: upload,
		MaxRows: campaigns.MaxRowsPerRequest, MaxSize: "1 MiB",
		MessagesURL: "/messages?" + url.Values{"campaign_id": {strconv.FormatInt(id, 10)}}.Encode(),
	}
	if c.Request.Method == http.MethodPost {
		data.Address = base
	}
	q := url.Values{}
	if v := strings.TrimSpace(c.Query("status")); v != "" && c.Request.Method == http.MethodGet {
		q.Set("status", v)
		data.Filter.Form["status"] = v
	}
	cursor := ""
	if c.Request.Method == http.MethodGet {
		cursor = c.Query("cursor")
	}
	list, err := d.cfg.Campaigns.ListRecipients(ctx, s.Principal.Tenant, id, campaigns.RecipientQuery{
		Status: q.Get("status"), Limit: strconv.Itoa(page.DefaultLimit), Cursor: cursor})
	if err != nil && !d.ListError(c, err, &pd, &data.Filter, &status) {
		return
	}
	for _, r := range list.Items {
		v := recipientView{Recipient: r}
		if r.SenderNumberID != nil {
			v.SenderPhone = phones[*r.SenderNumberID]
		}
		if r.Status == campaigns.RecipientSkipped && r.ErrorCode != nil {
			v.Reason = campaigns.SkipReason(*r.ErrorCode)
		}
		data.Recipients = append(data.Recipients, v)
	}
	data.Pager = web.NewPager(base, q, cursor, list.NextCursor, "#recipients-h")
	d.setRefresh(c, &pd, &data, base, q, cursor)
	pd.Title, pd.Nav, pd.Data = "Campaign "+camp.Name, "campaigns", data
	d.RenderStatus(c, status, "campaign", pd)
}

// setRefresh makes a live campaign's page reload itself every
// refreshSeconds, to the same recipients, unless ?refresh=off asked it
// not to; it sets the links that stop and restart the reloading.
func (d *Pages) setRefresh(c *gin.Context, pd *web.PageData, data *campaignData, base string, q url.Values, cursor string) {
	if !data.Campaign.Live(d.Now()) {
		return
	}
	here := url.Values{}
	for k, v := range q {
		here[k] = v
	}
	if cursor != "" {
		here.Set("cursor", cursor)
	}
	link := func(v url.Values) string {
		if len(v) == 0 {
			return base
		}
		return base + "?" + v.Encode()
	}
	if c.Request.Method == http.MethodGet && c.Query("refresh") == "off" {
		data.RefreshOn = link(here)
		return
	}
	data.Live = true
	pd.Refresh, pd.RefreshURL = refreshSeconds, link(here)
	here.Set("refresh", "off")
	data.RefreshOff = link(here)
}

// readCSV reads the recipients of a form: the file recipients_file, or
// the rows pasted in recipients_csv. csv is nil when neither was given;
// fileGiven reports a chosen file (which a browser does not keep when the
// form comes back with errors). Both at once is a 422 on the file field.
func readCSV(c *gin.Context) (csv []byte, fileGiven bool, err error) {
	pasted := c.PostForm("recipients_csv")
	fh, ferr := c.FormFile("recipients_file")
	if ferr == nil && (fh.Filename != "" || fh.Size > 0) {
		if strings.TrimSpace(pasted) != "" {
			var v apperr.Validation
			v.Add("recipients_file", "choose a file or paste rows, not both")
			return nil, true, v.Err()
		}
		f, err := fh.Open()
		if err != nil {
			return nil, true, apperr.Wrap(err, apperr.KindMalformed, campaigns.CodeMalformedCSV, "The file could not be read.")
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			return nil, true, apperr.Wrap(err, apperr.KindMalformed, campaigns.CodeMalformedCSV, "The file could not be read.")
		}
		return b, true, nil
	}
	if ferr != nil && !errors.Is(ferr, http.ErrMissingFile) && !errors.Is(ferr, http.ErrNotMultipart) {
		return nil, false, apperr.Wrap(ferr, apperr.KindMalformed, campaigns.CodeMalformedCSV, "The file could not be read.")
	}
	if strings.TrimSpace(pasted) == "" {
		return nil, false, nil
	}
	return []byte(pasted), false, nil
}

// addRecipients adds the recipients of the form's CSV to a draft.
func (d *Pages) addRecipients(c *gin.Context) {
	_, id, ok := d.AdminAction(c, "campaign", "add recipients")
	if !ok {
		return
	}
	csv, _, csvErr := readCSV(c)
	if csvErr == nil && csv == nil {
		var v apperr.Validation
		v.Add("recipients_file", "choose a CSV file, or paste rows")
		csvErr = v.Err()
	}
	d.finishUpload(c, id, csv, csvErr, "recipients_added", "")
}

// finishUpload adds csv's recipients to campaign id (unless reading the
// form failed with csvErr) and answers: a redirect to the campaign's page
// with the notice okCode when every row was added; else that page, as
// the answer to this POST, with what was added, the duplicates and the
// invalid rows with their errors, or why nothing was added. done, when
// set, starts the page's messages (what the form did before).
func (d *Pages) finishUpload(c *gin.Context, id int64, csv []byte, csvErr error, okCode, done string) {
	s := web.SessionOf(c)
	form := map[string]string{"recipients_csv": c.PostForm("recipients_csv")}
	pd := web.PageData{Form: form}
	var added campaigns.Added
	err := csvErr
	if err == nil {
		added, err = d.cfg.Campaigns.AddRecipients(c.Request.Context(), s.Principal.Tenant, id, csvMediaType, csv)
	}
	if err != nil {
		status, msg, fields, ok := web.FormError(err)
		if !ok || status == http.StatusNotFound {
			d.Internal(c, err)
			return
		}
		pd.Error = strings.TrimSpace(done + " No recipients were added: " + msg)
		if fields == nil {
			fields = map[string][]string{"recipients_file": {msg}}
		}
		pd.Fields = fields
		d.renderCampaign(c, status, pd, id, nil)
		return
	}
	if len(added.Invalid) == 0 && added.Duplicates == 0 {
		web.Redirect(c, "/campaigns/"+strconv.FormatInt(id, 10)+"?ok="+okCode)
		return
	}
	up := &uploadView{Added: added, Shown: added.Invalid}
	if len(up.Shown) > maxInvalidShown {
		up.Shown, up.More = up.Shown[:maxInvalidShown], len(up.Shown)-maxInvalidShown
	}
	pd.Form = nil
	pd.Notice = strings.TrimSpace(done + " " + addedSummary(added))
	d.renderCampaign(c, http.StatusOK, pd, id, up)
}

// addedSummary says what an upload did: "2 recipients added; 1 duplicate
// and 3 invalid rows were not."
func addedSummary(a campaigns.Added) string {
	plural := func(n int, one, many string) string {
		if n == 1 {
			return "1 " + one
		}
		return thousands(n) + " " + many
	}
	out := plural(a.Added, "recipient added", "recipients added")
	var not []string
	if a.Duplicates > 0 {
		not = append(not, plural(a.Duplicates, "duplicate", "duplicates"))
	}
	if len(a.Invalid) > 0 {
		not = append(not, plural(len(a.Invalid), "invalid row", "invalid rows"))
	}
	if len(not) == 0 {
		return out + "."
	}
	verb := " were not."
	if a.Duplicates+len(a.Invalid) == 1 {
		verb = " was not."
	}
	return out + "; " + strings.Join(not, " and ") + verb
}

// transition is a POST that changes a campaign's state through do (what
// it does, for a member's refusal): a redirect to the campaign's page
// with the notice okCode, or that page with the service's refusal (no
// recipients, a sender number not active, a template not approved, a
// state that does not allow it).
func (d *Pages) transition(what string, do func(context.Context, db.Tenant, int64) (campaigns.Campaign, error), okCode string) gin.HandlerFunc {
	return func(c *gin.Context) {
		s, id, ok := d.AdminAction(c, "campaign", what)
		if !ok {
			return
		}
		camp, err := do(c.Request.Context(), s.Principal.Tenant, id)
		if err != nil {
			status, msg, _, ok := web.FormError(err)
			if !ok || status == http.StatusNotFound {
				d.Internal(c, err)
				return
			}
			d.renderCampaign(c, status, web.PageData{Error: msg}, id, nil)
			return
		}
		if okCode == "campaign_started" && camp.Status == campaigns.StatusScheduled {
			okCode = "campaign_scheduled"
		}
		web.Redirect(c, "/campaigns/"+strconv.FormatInt(id, 10)+"?ok="+okCode)
	}
}

// cancelCampaignPage asks for confirmation before canceling a campaign.
func (d *Pages) cancelCampaignPage(c *gin.Context) {
	s, id, ok := d.AdminAction(c, "campaign", "cancel campaigns")
	if !ok {
		return
	}
	camp, err := d.cfg.Campaigns.Get(c.Request.Context(), s.Principal.Tenant, id)
	if err != nil {
		d.Internal(c, err)
		return
	}
	d.Render(c, "campaign_cancel", web.PageData{Title: "Cancel campaign", Nav: "campaigns", Data: viewCampaign(camp, nil)})
}
