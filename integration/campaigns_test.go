package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/templates"
)

// Campaigns: docs/api.md, §Campaigns. The release (recipients turned into
// messages) is not part of these tests: where a test needs a released
// recipient it writes the rows the release writes (campaign_recipients
// and messages.campaign_id), the tables that are the release's contract.

const campaignsPath = "/api/v1/campaigns"

// campaignCounts is a campaign's counts.
type campaignCounts struct {
	Total     int `json:"total"`
	Pending   int `json:"pending"`
	Queued    int `json:"queued"`
	Sent      int `json:"sent"`
	Delivered int `json:"delivered"`
	Read      int `json:"read"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
}

// campaign is the campaign resource.
type campaign struct {
	ID              int64          `json:"id"`
	Name            string         `json:"name"`
	Status          string         `json:"status"`
	SenderNumberIDs []int64        `json:"sender_number_ids"`
	TemplateID      *int64         `json:"template_id"`
	Type            string         `json:"type"`
	Content         *string        `json:"content"`
	SendAt          *string        `json:"send_at"`
	ReservePercent  int            `json:"reserve_percent"`
	Counts          campaignCounts `json:"counts"`
	SkipReasons     map[string]int `json:"skip_reasons"`
	StartedAt       *string        `json:"started_at"`
	PausedAt        *string        `json:"paused_at"`
	CanceledAt      *string        `json:"canceled_at"`
}

// campaignRecipient is one row of a campaign's recipient list.
type campaignRecipient struct {
	Phone     string  `json:"phone"`
	Status    string  `json:"status"`
	MessageID *int64  `json:"message_id"`
	ErrorCode *string `json:"error_code"`
}

// textCampaign is the body of a plain text campaign from senders.
func textCampaign(name string, senders ...int64) map[string]any {
	return map[string]any{"name": name, "sender_number_ids": senders, "type": "text", "content": "Our sale starts today."}
}

// campaignOf checks a response's status and returns its campaign.
func campaignOf(t *testing.T, r *Response, status int) campaign {
	t.Helper()
	if r.Status != status {
		t.Fatalf("answer %d %s, want %d", r.Status, r.Body, status)
	}
	var out struct {
		Data campaign `json:"data"`
	}
	r.JSON(t, &out)
	return out.Data
}

// createCampaign creates a campaign with key and returns it.
func createCampaign(t *testing.T, e *Env, key map[string]string, body map[string]any) campaign {
	t.Helper()
	return campaignOf(t, e.Do(Request{Method: http.MethodPost, Path: campaignsPath, Header: key, Body: body}), http.StatusCreated)
}

// campaignAction posts /campaigns/{id}/<action> with key.
func campaignAction(e *Env, key map[string]string, id int64, action string) *Response {
	return e.Do(Request{Method: http.MethodPost, Path: fmt.Sprintf("%s/%d/%s", campaignsPath, id, action), Header: key})
}

// getCampaign reads campaign id.
func getCampaign(t *testing.T, e *Env, key map[string]string, id int64) campaign {
	t.Helper()
	return campaignOf(t, e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("%s/%d", campaignsPath, id), Header: key}), http.StatusOK)
}

// TestCampaignCreate: a valid campaign is a draft with what was given;
// every rule of its fields is a 422 naming the field; a sender number or
// template the organization does not have is refused.
func TestCampaignCreate(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org, other := e.Register(t), e.Register(t)
	key := org.Key()
	s1, s2 := e.registerSender(org, phoneN(1)), e.registerSender(org, phoneN(2))
	foreign := e.registerSender(other, phoneN(3))
	tpl := createTemplate(t, e.Env, key, templateBody("order_update", "en_US"))

	c := createCampaign(t, e.Env, key, textCampaign(" Spring sale ", s2, s1))
	if c.Status != "draft" || c.Name != "Spring sale" || len(c.SenderNumberIDs) != 2 || c.SenderNumberIDs[0] != s2 ||
		c.Type != "text" || c.Content == nil || c.TemplateID != nil || c.ReservePercent != 10 || c.SendAt != nil ||
		c.Counts != (campaignCounts{}) || len(c.SkipReasons) != 0 || c.StartedAt != nil {
		t.Fatalf("created %+v", c)
	}
	sendAt := e.Clock.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	withTpl := createCampaign(t, e.Env, key, map[string]any{"name": "Orders", "sender_number_ids": []int64{s1},
		"template": map[string]string{"name": "order_update", "language": "en_US"}, "reserve_percent": 0,
		"send_at": sendAt.Format(time.RFC3339)})
	if withTpl.TemplateID == nil || *withTpl.TemplateID != tpl.ID || withTpl.Type != "template" || withTpl.Content != nil ||
		withTpl.ReservePercent != 0 || withTpl.SendAt == nil || *withTpl.SendAt != sendAt.Format(time.RFC3339) {
		t.Fatalf("template campaign %+v", withTpl)
	}
	media := createCampaign(t, e.Env, key, map[string]any{"name": "Flyer", "sender_number_ids": []int64{s1}, "type": "image",
		"content": "https://example.com/flyer.png", "file_name": "flyer.png", "file_size": 2048, "file_type": "image/png"})
	if media.Type != "image" {
		t.Fatalf("image campaign %+v", media)
	}

	with := func(edit func(map[string]any)) map[string]any {
		b := textCampaign("Sale", s1)
		edit(b)
		return b
	}
	set := func(k string, v any) func(map[string]any) { return func(b map[string]any) { b[k] = v } }
	fifty := make([]int64, 51)
	for i := range fifty {
		fifty[i] = int64(i + 1)
	}
	tests := []struct {
		name  string
		body  any
		field string
	}{
		{"no name", with(func(b map[string]any) { delete(b, "name") }), "name"},
		{"blank name", with(set("name", "  ")), "name"},
		{"long name", with(set("name", strings.Repeat("a", 201))), "name"},
		{"name with a control character", with(set("name", "a\u0007b")), "name"},
		{"no senders", with(func(b map[string]any) { delete(b, "sender_number_ids") }), "sender_number_ids"},
		{"empty senders", with(set("sender_number_ids", []int64{})), "sender_number_ids"},
		{"51 senders", with(set("sender_number_ids", fifty)), "sender_number_ids"},
		{"a sender twice", with(set("sender_number_ids", []int64{s1, s1})), "sender_number_ids"},
		{"a sender id not positive", with(set("sender_number_ids", []int64{0})), "sender_number_ids"},
		{"senders not an array", with(set("sender_number_ids", "1")), "sender_number_ids"},
		{"unknown sender", with(set("sender_number_ids", []int64{s1, 999})), "sender_number_ids"},
		{"another organization's sender", with(set("sender_number_ids", []int64{foreign + 100})), "sender_number_ids"},
		{"no type nor template", with(func(b map[string]any) { delete(b, "type") }), "type"},
		{"unknown type", with(set("type", "video")), "type"},
		{"no content", with(func(b map[string]any) { delete(b, "content") }), "content"},
		{"content too long", with(set("content", strings.Repeat("a", 4097))), "content"},
		{"image without file fields", with(func(b map[string]any) { b["type"], b["content"] = "image", "https://x.example/a.png" }), "file_name"},
		{"voice without duration", with(func(b map[string]any) {
			b["type"], b["content"], b["file_name"], b["file_size"], b["file_type"] = "voice", "https://x.example/a.ogg", "a.ogg", 10, "audio/ogg"
		}), "duration"},
		{"template and content", with(set("template", map[string]string{"name": "order_update", "language": "en_US"})), "content"},
		{"template without a name", with(func(b map[string]any) {
			delete(b, "content")
			delete(b, "type")
			b["template"] = map[string]string{"language": "en_US"}
		}), "template.name"},
		{"template not an object", with(func(b map[string]any) { delete(b, "type"); delete(b, "content"); b["template"] = "x" }), "template"},
		{"send_at in the past", with(set("send_at", e.Clock.Now().Add(-time.Minute).Format(time.RFC3339))), "send_at"},
		{"send_at past 35 days", with(set("send_at", e.Clock.Now().Add(36*24*time.Hour).Format(time.RFC3339))), "send_at"},
		{"send_at not a time", with(set("send_at", "tomorrow")), "send_at"},
		{"reserve_percent over 100", with(set("reserve_percent", 101)), "reserve_percent"},
		{"reserve_percent negative", with(set("reserve_percent", -1)), "reserve_percent"},
		{"reserve_percent not an integer", with(set("reserve_percent", 10.5)), "reserve_percent"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := e.Do(Request{Method: http.MethodPost, Path: campaignsPath, Header: key, Body: tc.body})
			if errs := fieldErrors(t, r); len(errs[tc.field]) == 0 {
				t.Fatalf("errors %v, want one on %s", errs, tc.field)
			}
		})
	}

	t.Run("unknown template", func(t *testing.T) {
		t.Parallel()
		r := e.Do(Request{Method: http.MethodPost, Path: campaignsPath, Header: key, Body: map[string]any{
			"name": "x", "sender_number_ids": []int64{s1}, "template": map[string]string{"name": "nope", "language": "en"}}})
		wantError(t, r, http.StatusUnprocessableEntity, "template_not_found")
	})
	t.Run("malformed", func(t *testing.T) {
		t.Parallel()
		r := e.Do(Request{Method: http.MethodPost, Path: campaignsPath, Header: key, Body: `{"name": `})
		wantError(t, r, http.StatusBadRequest, "malformed_json")
	})
	// Nothing was stored by a refused request.
	list := listCampaigns(t, e.Env, key, url.Values{"limit": {"100"}})
	if len(list) != 3 {
		t.Fatalf("%d campaigns stored, want 3", len(list))
	}
}

// listCampaigns lists with key and the query q, following every page.
func listCampaigns(t *testing.T, e *Env, key map[string]string, q url.Values) []campaign {
	t.Helper()
	var all []campaign
	for {
		r := e.Do(Request{Method: http.MethodGet, Path: campaignsPath + "?" + q.Encode(), Header: key})
		if r.Status != http.StatusOK {
			t.Fatalf("list campaigns = %d %s", r.Status, r.Body)
		}
		var out struct {
			Data       []campaign `json:"data"`
			NextCursor *string    `json:"next_cursor"`
		}
		r.JSON(t, &out)
		all = append(all, out.Data...)
		if out.NextCursor == nil {
			return all
		}
		q.Set("cursor", *out.NextCursor)
	}
}

// TestCampaignStates: start needs recipients, active senders and an
// approved template; send_at makes it scheduled; pause, resume and
// cancel move it as the states allow and answer 409 otherwise; cancel
// skips the pending recipients.
func TestCampaignStates(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org := e.Register(t)
	key := org.Key()
	active := e.activeSender(org, phoneN(1))
	pending := e.registerSender(org, phoneN(2))
	tpl := createTemplate(t, e.Env, key, templateBody("order_update", "en_US"))
	add := func(id int64, phones ...string) {
		t.Helper()
		rows := make([]map[string]any, len(phones))
		for i, p := range phones {
			rows[i] = map[string]any{"phone": p, "variables": map[string]string{"1": "A-1", "2": "Ana"}}
		}
		if got := addedOf(t, addRecipients(e.Env, key, id, rows)); got.Added != len(phones) {
			t.Fatalf("added %+v", got)
		}
	}

	// No recipients.
	c := createCampaign(t, e.Env, key, textCampaign("empty", active))
	wantError(t, campaignAction(e.Env, key, c.ID, "start"), http.StatusUnprocessableEntity, "campaign_no_recipients")

	// A sender number that is not active.
	c = createCampaign(t, e.Env, key, textCampaign("inactive", active, pending))
	addPlain(t, e.Env, key, c.ID, phoneN(10))
	m := wantError(t, campaignAction(e.Env, key, c.ID, "start"), http.StatusUnprocessableEntity, "sender_not_active")
	if m["sender_number_id"] != float64(pending) || m["sender_status"] != "pending_verification" {
		t.Fatalf("sender_not_active body %v", m)
	}
	if got := getCampaign(t, e.Env, key, c.ID); got.Status != "draft" {
		t.Fatalf("after a refused start: %s", got.Status)
	}

	// A template that is not approved (the review has not run: no workers).
	tc := createCampaign(t, e.Env, key, map[string]any{"name": "tpl", "sender_number_ids": []int64{active},
		"template": map[string]string{"name": "order_update", "language": "en_US"}})
	add(tc.ID, phoneN(11))
	wantError(t, campaignAction(e.Env, key, tc.ID, "start"), http.StatusUnprocessableEntity, "template_not_approved")
	if _, _, err := e.App.Templates.SetStatus(context.Background(), org.Tenant, tpl.ID, templates.StatusApproved, ""); err != nil {
		t.Fatal(err)
	}
	started := campaignOf(t, campaignAction(e.Env, key, tc.ID, "start"), http.StatusOK)
	if started.Status != "running" || started.StartedAt == nil || started.Counts.Pending != 1 || started.Counts.Total != 1 {
		t.Fatalf("started %+v", started)
	}

	// The transitions of a running campaign, and the 409s of the others.
	wantError(t, campaignAction(e.Env, key, tc.ID, "start"), http.StatusConflict, "campaign_state")
	wantError(t, campaignAction(e.Env, key, tc.ID, "resume"), http.StatusConflict, "campaign_state")
	wantError(t, addRecipients(e.Env, key, tc.ID, []map[string]any{{"phone": phoneN(12)}}), http.StatusConflict, "campaign_state")
	paused := campaignOf(t, campaignAction(e.Env, key, tc.ID, "pause"), http.StatusOK)
	if paused.Status != "paused" || paused.PausedAt == nil {
		t.Fatalf("paused %+v", paused)
	}
	wantError(t, campaignAction(e.Env, key, tc.ID, "pause"), http.StatusConflict, "campaign_state")
	if got := campaignOf(t, campaignAction(e.Env, key, tc.ID, "resume"), http.StatusOK); got.Status != "running" ||
		*got.StartedAt != *started.StartedAt {
		t.Fatalf("resumed %+v", got)
	}
	canceled := campaignOf(t, campaignAction(e.Env, key, tc.ID, "cancel"), http.StatusOK)
	if canceled.Status != "canceled" || canceled.CanceledAt == nil || canceled.Counts.Pending != 0 ||
		canceled.Counts.Skipped != 1 || canceled.SkipReasons["canceled"] != 1 {
		t.Fatalf("canceled %+v", canceled)
	}
	for _, action := range []string{"start", "pause", "resume", "cancel"} {
		wantError(t, campaignAction(e.Env, key, tc.ID, action), http.StatusConflict, "campaign_state")
	}
	rs := listRecipients(t, e.Env, key, tc.ID, url.Values{})
	if len(rs) != 1 || rs[0].Status != "skipped" || rs[0].ErrorCode == nil || *rs[0].ErrorCode != "campaign_canceled" {
		t.Fatalf("recipients after cancel %+v", rs)
	}

	// send_at ahead: scheduled; paused and resumed before it, scheduled
	// again; resumed after it, running.
	sc := createCampaign(t, e.Env, key, map[string]any{"name": "later", "sender_number_ids": []int64{active},
		"type": "text", "content": "Hello", "send_at": e.Clock.Now().Add(time.Hour).Format(time.RFC3339)})
	addPlain(t, e.Env, key, sc.ID, phoneN(13), phoneN(14))
	if got := campaignOf(t, campaignAction(e.Env, key, sc.ID, "start"), http.StatusOK); got.Status != "scheduled" || got.StartedAt != nil {
		t.Fatalf("started with send_at %+v", got)
	}
	campaignOf(t, campaignAction(e.Env, key, sc.ID, "pause"), http.StatusOK)
	if got := campaignOf(t, campaignAction(e.Env, key, sc.ID, "resume"), http.StatusOK); got.Status != "scheduled" {
		t.Fatalf("resumed before send_at: %s", got.Status)
	}
	campaignOf(t, campaignAction(e.Env, key, sc.ID, "pause"), http.StatusOK)
	e.Clock.Advance(2 * time.Hour)
	if got := campaignOf(t, campaignAction(e.Env, key, sc.ID, "resume"), http.StatusOK); got.Status != "running" || got.StartedAt == nil {
		t.Fatalf("resumed after send_at: %+v", got)
	}

	// A draft cancels too; a draft cannot be paused.
	d := createCampaign(t, e.Env, key, textCampaign("draft", active))
	addPlain(t, e.Env, key, d.ID, phoneN(15))
	wantError(t, campaignAction(e.Env, key, d.ID, "pause"), http.StatusConflict, "campaign_state")
	if got := campaignOf(t, campaignAction(e.Env, key, d.ID, "cancel"), http.StatusOK); got.Status != "canceled" || got.Counts.Skipped != 1 {
		t.Fatalf("canceled draft %+v", got)
	}
	wantError(t, campaignAction(e.Env, key, 999999, "start"), http.StatusNotFound, "not_found")
}

// TestCampaignStartConcurrent: of concurrent starts of one draft, one
// starts it and the others get 409; of concurrent cancels, one cancels.
func TestCampaignStartConcurrent(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org := e.Register(t)
	key := org.Key()
	c := createCampaign(t, e.Env, key, textCampaign("race", e.activeSender(org, phoneN(1))))
	addPlain(t, e.Env, key, c.ID, phoneN(2))
	for _, action := range []string{"start", "cancel"} {
		results := make(chan int, 4)
		for range 4 {
			go func() { results <- campaignAction(e.Env, key, c.ID, action).Status }()
		}
		ok := 0
		for range 4 {
			switch st := <-results; st {
			case http.StatusOK:
				ok++
			case http.StatusConflict:
			default:
				t.Errorf("%s answered %d", action, st)
			}
		}
		if ok != 1 {
			t.Fatalf("%d concurrent %ss succeeded, want 1", ok, action)
		}
	}
}
