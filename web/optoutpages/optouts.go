package optoutpages

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/consent"
	"github.com/bizmsg/platform/platform/page"
	"github.com/bizmsg/platform/platform/phone"
	"github.com/bizmsg/platform/web"
)

// The opt-outs page is the organization's opt-out list and its
// confirmation texts, through consent.Service, the service of the Tenant
// API's /opt-outs routes (docs/api.md, §Opt-outs). Every member may read
// the list; adding, removing and changing the texts are for owners and
// admins, as managing webhook endpoints is. The phone of a removal travels
// in the query of its confirmation page and in the body of its POST, never
// in a path, so the access log does not record it.

// optOutFilterFields are the list's filters: the query parameters of
// GET /api/v1/opt-outs, with the same names.
var optOutFilterFields = []string{"phone", "source"}

// optOutNotice is the success message of an opt-out form's redirect
// (?ok=<code>): fixed texts, so the URL carries no content of its own.
func optOutNotice(code string) string {
	switch code {
	case "opt_out_added":
		return "Phone added to the opt-out list: messages to it are refused from now on."
	case "opt_out_exists":
		return "That phone was on the opt-out list already; its entry is unchanged."
	case "opt_out_removed":
		return "Phone removed from the opt-out list: it can be messaged again."
	case "replies_saved":
		return "Confirmation texts saved."
	}
	return ""
}

// optOutView is an entry as the list shows it.
type optOutView struct {
	consent.Entry
	// SenderPhone is the sender number the keyword came to ("" when none,
	// or the number is gone).
	SenderPhone string
	// RemoveURL is the entry's confirmation page.
	RemoveURL string
}

// optOutsData is the opt-outs page's data.
type optOutsData struct {
	Entries []optOutView
	// Filter holds the filter form's values and errors, apart from the add
	// form's, whose phone field has the same name.
	Filter  web.PageData
	Sources []string
	// OptOutHelp and OptInHelp describe the confirmation texts' fields:
	// the English default, and whether it is in force (no text set).
	OptOutHelp, OptInHelp string
	MaxNote, MaxReply     int
	web.Pager
}

// optOutsPage is the opt-out list, filtered and paged as the API's, with
// the add and reply-text forms for owners and admins.
func (d *Pages) optOutsPage(c *gin.Context) {
	d.renderOptOuts(c, http.StatusOK, web.PageData{Notice: optOutNotice(c.Query("ok"))}, c.Request.URL.Query())
}

// renderOptOuts renders the opt-outs page with the list filtered by q. A
// form error in data keeps its status; a bad filter is a 422 naming it on
// the filter form. Reply texts not in data.Form are the ones in force.
func (d *Pages) renderOptOuts(c *gin.Context, status int, data web.PageData, q url.Values) {
	s := web.SessionOf(c)
	ctx := c.Request.Context()
	out := optOutsData{
		Filter:   web.PageData{Form: map[string]string{}},
		Sources:  []string{consent.SourceKeyword, consent.SourceAPI, consent.SourceDashboard},
		MaxNote:  consent.MaxNoteLength,
		MaxReply: consent.MaxReplyLength,
	}
	filters := url.Values{}
	for _, f := range optOutFilterFields {
		if v := q.Get(f); v != "" {
			out.Filter.Form[f] = v
			filters.Set(f, v)
		}
	}
	cursor := q.Get("cursor")
	list, err := d.cfg.Consent.List(ctx, s.Principal.Tenant, consent.ListQuery{
		Phone: phone.FromQuery(filters.Get("phone")), Source: filters.Get("source"),
		Limit: strconv.Itoa(page.DefaultLimit), Cursor: cursor})
	if err != nil && !d.ListError(c, err, &data, &out.Filter, &status) {
		return
	}
	set, err := d.cfg.Consent.Settings(ctx, s.Principal.Tenant)
	if err != nil {
		d.Internal(c, err)
		return
	}
	if data.Form == nil {
		data.Form = map[string]string{}
	}
	optOut, optIn := set.Replies()
	out.OptOutHelp = replyHelp(set.OptOutReply == nil, consent.DefaultOptOutReply)
	out.OptInHelp = replyHelp(set.OptInReply == nil, consent.DefaultOptInReply)
	if _, kept := data.Form["opt_out_reply"]; !kept {
		data.Form["opt_out_reply"] = optOut
	}
	if _, kept := data.Form["opt_in_reply"]; !kept {
		data.Form["opt_in_reply"] = optIn
	}
	senderPhones, err := d.SenderPhones(ctx, s.Principal.Tenant)
	if err != nil {
		d.Internal(c, err)
		return
	}
	for _, e := range list.Items {
		v := optOutView{Entry: e, RemoveURL: "/opt-outs/remove?" + url.Values{"phone": {e.Phone}}.Encode()}
		if e.SenderNumberID != nil {
			v.SenderPhone = senderPhones[*e.SenderNumberID]
		}
		out.Entries = append(out.Entries, v)
	}
	out.Pager = web.NewPager("/opt-outs", filters, cursor, list.NextCursor, "#opt-outs-h")
	data.Title, data.Nav, data.Data = "Opt-outs", "opt-outs", out
	d.RenderStatus(c, status, "optouts", data)
}

// replyHelp is the help of a confirmation text's field: its English
// default, said to be in force while the organization has set no text.
func replyHelp(unset bool, def string) string {
	if unset {
		return "You have not set this text, so the English default is sent: “" + def + "” Empty: no answer."
	}
	return "The English default: “" + def + "” Empty: no answer."
}

// consentActor is the signed-in member as the consent service records them
// in the audit log.
func consentActor(s *web.Session) consent.Actor {
	return consent.Actor{UserID: s.Principal.UserID}
}

// addOptOut puts a phone on the list (source dashboard) through the
// service's validation; a phone already on it keeps its entry.
func (d *Pages) addOptOut(c *gin.Context) {
	s, ok := d.RequireAdmin(c, "change the opt-out list")
	if !ok {
		return
	}
	raw, note := c.PostForm("phone"), c.PostForm("note")
	_, added, err := d.cfg.Consent.Add(c.Request.Context(), s.Principal.Tenant, consentActor(s),
		consent.AddRequest{Phone: raw, Note: note, Source: consent.SourceDashboard})
	if err == nil {
		code := "opt_out_added"
		if !added {
			code = "opt_out_exists"
		}
		web.Redirect(c, "/opt-outs?ok="+code)
		return
	}
	pd := web.PageData{Form: map[string]string{"phone": raw, "note": note}}
	if status, ok := d.FormStatus(c, err, &pd); ok {
		d.renderOptOuts(c, status, pd, url.Values{})
	}
}

// removeOptOutPage asks for confirmation before taking a phone off the
// list. A phone not on it is the 404 page.
func (d *Pages) removeOptOutPage(c *gin.Context) {
	s, ok := d.RequireAdmin(c, "change the opt-out list")
	if !ok {
		return
	}
	raw := phone.FromQuery(c.Query("phone"))
	list, err := d.cfg.Consent.List(c.Request.Context(), s.Principal.Tenant, consent.ListQuery{Phone: raw, Limit: "1"})
	if err == nil && (raw == "" || len(list.Items) == 0) {
		err = apperr.NotFound("opt-out")
	}
	if err != nil {
		d.Internal(c, err)
		return
	}
	d.Render(c, "optout_remove", web.PageData{Title: "Remove opt-out", Nav: "opt-outs", Data: list.Items[0]})
}

// removeOptOut takes a phone off the list: the phone opts back in, which
// the service writes to the audit log.
func (d *Pages) removeOptOut(c *gin.Context) {
	s, ok := d.RequireAdmin(c, "change the opt-out list")
	if !ok {
		return
	}
	err := d.cfg.Consent.Remove(c.Request.Context(), s.Principal.Tenant, consentActor(s), c.PostForm("phone"), consent.SourceDashboard)
	if err != nil {
		status, msg, fields, ok := web.FormError(err)
		if !ok || status == http.StatusNotFound {
			d.Internal(c, err)
			return
		}
		// The phone came from a hidden field: say what is wrong with it
		// in the alert, not on the add form's phone field.
		if len(fields["phone"]) > 0 {
			msg = "Not removed: the phone " + strings.Join(fields["phone"], "; ") + "."
		}
		d.renderOptOuts(c, status, web.PageData{Error: msg}, url.Values{})
		return
	}
	web.Redirect(c, "/opt-outs?ok=opt_out_removed")
}

// saveReplies sets both confirmation texts (empty: no confirmation).
func (d *Pages) saveReplies(c *gin.Context) {
	s, ok := d.RequireAdmin(c, "change the confirmation texts")
	if !ok {
		return
	}
	optOut, optIn := c.PostForm("opt_out_reply"), c.PostForm("opt_in_reply")
	_, err := d.cfg.Consent.PutSettings(c.Request.Context(), s.Principal.Tenant,
		consent.SettingsRequest{OptOutReply: &optOut, OptInReply: &optIn})
	if err == nil {
		web.Redirect(c, "/opt-outs?ok=replies_saved#replies-h")
		return
	}
	pd := web.PageData{Form: map[string]string{"opt_out_reply": optOut, "opt_in_reply": optIn}}
	if status, ok := d.FormStatus(c, err, &pd); ok {
		d.renderOptOuts(c, status, pd, url.Values{})
	}
}
