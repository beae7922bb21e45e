package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/templates"
)

// Campaign recipients, lists, counts, isolation and scope: docs/api.md,
// §Campaigns.

// added is the answer of POST /campaigns/{id}/recipients.
type added struct {
	Added      int `json:"added"`
	Duplicates int `json:"duplicates"`
	Invalid    []struct {
		Row   int    `json:"row"`
		Phone string `json:"phone"`
		Error string `json:"error"`
	} `json:"invalid"`
}

func recipientsPath(id int64) string { return fmt.Sprintf("%s/%d/recipients", campaignsPath, id) }

// addRecipients posts body (JSON) as campaign id's recipients.
func addRecipients(e *Env, key map[string]string, id int64, body any) *Response {
	return e.Do(Request{Method: http.MethodPost, Path: recipientsPath(id), Header: key, Body: body})
}

// addCSV posts csv as campaign id's recipients.
func addCSV(e *Env, key map[string]string, id int64, csv string) *Response {
	h := map[string]string{"Content-Type": "text/csv"}
	for k, v := range key {
		h[k] = v
	}
	return e.Do(Request{Method: http.MethodPost, Path: recipientsPath(id), Header: h, Body: csv})
}

// addedOf checks a 200 and returns what was added.
func addedOf(t *testing.T, r *Response) added {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("add recipients = %d %s", r.Status, r.Body)
	}
	var out struct {
		Data added `json:"data"`
	}
	r.JSON(t, &out)
	return out.Data
}

// addPlain adds phones to a plain campaign.
func addPlain(t *testing.T, e *Env, key map[string]string, id int64, phones ...string) {
	t.Helper()
	rows := make([]map[string]any, len(phones))
	for i, p := range phones {
		rows[i] = map[string]any{"phone": p}
	}
	if got := addedOf(t, addRecipients(e, key, id, rows)); got.Added != len(phones) {
		t.Fatalf("added %+v of %d", got, len(phones))
	}
}

// listRecipients lists campaign id's recipients with the query q, every
// page (limit 2, so paging is exercised).
func listRecipients(t *testing.T, e *Env, key map[string]string, id int64, q url.Values) []campaignRecipient {
	t.Helper()
	var all []campaignRecipient
	q.Set("limit", "2")
	for {
		r := e.Do(Request{Method: http.MethodGet, Path: recipientsPath(id) + "?" + q.Encode(), Header: key})
		if r.Status != http.StatusOK {
			t.Fatalf("list recipients = %d %s", r.Status, r.Body)
		}
		var out struct {
			Data       []campaignRecipient `json:"data"`
			NextCursor *string             `json:"next_cursor"`
		}
		r.JSON(t, &out)
		all = append(all, out.Data...)
		if out.NextCursor == nil {
			return all
		}
		q.Set("cursor", *out.NextCursor)
	}
}

// TestCampaignRecipients: JSON and CSV rows, normalised phones,
// duplicates within a request and against earlier ones, invalid rows
// with their 1-based numbers, a template's variables checked per row,
// and the request-level limits and errors.
func TestCampaignRecipients(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org := e.Register(t)
	key := org.Key()
	sender := e.registerSender(org, phoneN(1))
	plain := createCampaign(t, e.Env, key, textCampaign("plain", sender))

	got := addedOf(t, addRecipients(e.Env, key, plain.ID, []any{
		map[string]any{"phone": "+1 (415) 555-0100", "client_reference": "c-1"},
		map[string]any{"phone": "+14155550101"},
		map[string]any{"phone": "+14155550100"}, // the first, written otherwise
		map[string]any{"phone": "not a phone"},
		map[string]any{"phone": 14155550102},
		"+14155550103",
		map[string]any{"phone": "+14155550104", "variables": map[string]string{"1": "x"}},
		map[string]any{},
		map[string]any{"phone": "+14155550105", "client_reference": strings.Repeat("r", 129)},
	}))
	if got.Added != 2 || got.Duplicates != 1 || len(got.Invalid) != 6 {
		t.Fatalf("added %+v", got)
	}
	wantRows := []int{4, 5, 6, 7, 8, 9}
	for i, inv := range got.Invalid {
		if inv.Row != wantRows[i] || inv.Error == "" {
			t.Fatalf("invalid rows %+v, want rows %v", got.Invalid, wantRows)
		}
	}
	if got.Invalid[0].Phone != "not a phone" {
		t.Fatalf("invalid row phone %q, want it as given", got.Invalid[0].Phone)
	}

	// CSV: the header is not a row; a phone the campaign has is a
	// duplicate; quoted cells and CRLF are CSV's.
	got = addedOf(t, addCSV(e.Env, key, plain.ID,
		"\uFEFFPhone,client_reference\r\n+14155550101,x\r\n\"+1 415 555 0106\",r-6\r\nbad,\r\n,r-8\r\n"))
	if got.Added != 1 || got.Duplicates != 1 || len(got.Invalid) != 2 || got.Invalid[0].Row != 3 || got.Invalid[1].Row != 4 {
		t.Fatalf("csv added %+v", got)
	}
	rs := listRecipients(t, e.Env, key, plain.ID, url.Values{})
	var phones []string
	for _, r := range rs {
		if r.Status != "pending" || r.MessageID != nil {
			t.Fatalf("recipient %+v", r)
		}
		phones = append(phones, r.Phone)
	}
	if want := []string{"+14155550106", "+14155550101", "+14155550100"}; !slices.Equal(phones, want) {
		t.Fatalf("recipients %v, want %v (last added first)", phones, want)
	}
	if c := getCampaign(t, e.Env, key, plain.ID); c.Counts.Total != 3 || c.Counts.Pending != 3 {
		t.Fatalf("counts %+v", c.Counts)
	}

	// A template campaign: every variable of the template, and no other.
	tpl := createTemplate(t, e.Env, key, map[string]any{"name": "welcome", "language": "en", "category": "marketing",
		"body": "Dear {{first_name}}, welcome to {{shop}}!", "examples": map[string]string{"first_name": "Ana", "shop": "Acme"}})
	if _, _, err := e.App.Templates.SetStatus(context.Background(), org.Tenant, tpl.ID, templates.StatusApproved, ""); err != nil {
		t.Fatal(err)
	}
	tc := createCampaign(t, e.Env, key, map[string]any{"name": "welcome", "sender_number_ids": []int64{sender},
		"template": map[string]string{"name": "welcome", "language": "en"}})
	got = addedOf(t, addCSV(e.Env, key, tc.ID, "phone,first_name,shop\n+14155550200,Ana,Acme\n+14155550201,,Acme\n"))
	if got.Added != 1 || len(got.Invalid) != 1 || got.Invalid[0].Row != 2 || !strings.Contains(got.Invalid[0].Error, "first_name") {
		t.Fatalf("template csv %+v", got)
	}
	got = addedOf(t, addRecipients(e.Env, key, tc.ID, []map[string]any{
		{"phone": "+14155550202", "variables": map[string]string{"first_name": "Bo", "shop": "Acme"}},
		{"phone": "+14155550203", "variables": map[string]string{"first_name": "Cy", "shop": "Acme", "x": "y"}},
		{"phone": "+14155550204", "variables": map[string]any{"first_name": 1, "shop": "Acme"}},
		{"phone": "+14155550205"},
	}))
	if got.Added != 1 || len(got.Invalid) != 3 {
		t.Fatalf("template json %+v", got)
	}

	// Request-level errors change nothing.
	tests := []struct {
		name   string
		do     func() *Response
		status int
		code   string
	}{
		{"malformed JSON", func() *Response { return addRecipients(e.Env, key, plain.ID, `[{"phone": `) }, 400, "malformed_json"},
		{"JSON not an array", func() *Response { return addRecipients(e.Env, key, plain.ID, `{"phone": "+14155550300"}`) }, 400, "malformed_json"},
		{"CSV with a bare quote", func() *Response { return addCSV(e.Env, key, plain.ID, "phone\n+1415\"555\n") }, 400, "malformed_csv"},
		{"CSV row of another length", func() *Response { return addCSV(e.Env, key, plain.ID, "phone,a\n+14155550300\n") }, 400, "malformed_csv"},
		{"CSV without a phone column", func() *Response { return addCSV(e.Env, key, plain.ID, "number\n+14155550300\n") }, 400, "malformed_csv"},
		{"CSV empty", func() *Response { return addCSV(e.Env, key, plain.ID, "") }, 400, "malformed_csv"},
		{"another media type", func() *Response {
			return e.Do(Request{Method: http.MethodPost, Path: recipientsPath(plain.ID), Body: "+14155550300",
				Header: map[string]string{"X-Api-Key": org.APIKey, "Content-Type": "text/plain"}})
		}, 415, "unsupported_media_type"},
		{"10,001 JSON rows", func() *Response { return addRecipients(e.Env, key, plain.ID, jsonRows(300000, 10001)) }, 422, "campaign_too_many_rows"},
		{"10,001 CSV rows", func() *Response { return addCSV(e.Env, key, plain.ID, csvRows(300000, 10001)) }, 422, "campaign_too_many_rows"},
		{"over 1 MiB", func() *Response {
			return addCSV(e.Env, key, plain.ID, "phone,pad\n+14155550300,"+strings.Repeat("a", 1<<20)+"\n")
		}, 413, "payload_too_large"},
		{"unknown campaign", func() *Response { return addRecipients(e.Env, key, 999999, []any{}) }, 404, "not_found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, tc.do(), tc.status, tc.code)
		})
	}
	if c := getCampaign(t, e.Env, key, plain.ID); c.Counts.Total != 3 {
		t.Fatalf("total %d after refused requests, want 3", c.Counts.Total)
	}
}

// jsonRows is a JSON array of n recipients with phones from first on.
func jsonRows(first, n int) []map[string]string {
	rows := make([]map[string]string, n)
	for i := range rows {
		rows[i] = map[string]string{"phone": fmt.Sprintf("+1415%07d", first+i)}
	}
	return rows
}

// csvRows is a CSV body of n recipients with phones from first on.
func csvRows(first, n int) string {
	var b strings.Builder
	b.WriteString("phone\n")
	for i := range n {
		fmt.Fprintf(&b, "+1415%07d\n", first+i)
	}
	return b.String()
}

// TestCampaignRecipientCap: a campaign takes 100,000 recipients, added
// 10,000 a request; a request that would pass the cap adds nothing. The
// time the ten requests took is logged (the figure of docs/api.md), never
// asserted.
func TestCampaignRecipientCap(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org := e.Register(t)
	key := org.Key()
	c := createCampaign(t, e.Env, key, textCampaign("big", e.registerSender(org, phoneN(1))))
	start := time.Now()
	for i := range 10 {
		body, err := json.Marshal(jsonRows(2_000_000+i*10_000, 10_000))
		if err != nil {
			t.Fatal(err)
		}
		if got := addedOf(t, addRecipients(e.Env, key, c.ID, body)); got.Added != 10_000 {
			t.Fatalf("request %d added %+v", i, got.Added)
		}
	}
	t.Logf("100,000 recipients added in 10 requests in %s", time.Since(start).Round(time.Millisecond))
	// A phone the campaign has is a duplicate, not an addition; one new
	// phone passes the cap, and nothing of its request is added.
	if got := addedOf(t, addRecipients(e.Env, key, c.ID, jsonRows(2_000_000, 1))); got.Added != 0 || got.Duplicates != 1 {
		t.Fatalf("a duplicate at the cap: %+v", got)
	}
	wantError(t, addRecipients(e.Env, key, c.ID, jsonRows(2_099_999, 2)), http.StatusUnprocessableEntity, "campaign_recipient_limit")
	if got := getCampaign(t, e.Env, key, c.ID); got.Counts.Total != 100_000 || got.Counts.Pending != 100_000 {
		t.Fatalf("counts after the cap %+v", got.Counts)
	}
}

// TestCampaignCounts: a campaign's counts and skip_reasons read its
// recipients and, once released, their messages; the recipient list shows
// a released recipient with its message's status, and the history lists
// a campaign's messages with campaign_id. The release is not built here:
// the test writes what the release writes (a recipient released with its
// message, one skipped with a check's code, messages.campaign_id).
func TestCampaignCounts(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org := e.Register(t)
	key := org.Key()
	sender := e.activeSender(org, phoneN(1))
	to := []string{phoneN(2), phoneN(3), phoneN(4), phoneN(5)}
	for _, p := range to {
		e.recipient(p)
	}
	c := createCampaign(t, e.Env, key, textCampaign("counted", sender))
	addPlain(t, e.Env, key, c.ID, to...)
	campaignOf(t, campaignAction(e.Env, key, c.ID, "start"), http.StatusOK)

	// Two recipients released: their messages (sent through the API, then
	// marked as the campaign's), one of them failed; one skipped, opted out.
	ctx := context.Background()
	for i, p := range to[:2] {
		m := accepted(t, e.send(org, text(sender, p, "Our sale starts today.")))
		status := "queued"
		if i == 1 {
			status = "failed"
		}
		if _, err := e.App.DB.Pool.Exec(ctx, `UPDATE `+org.Tenant.Table("messages")+` SET campaign_id = $1, status = $3
			WHERE id = $2`, c.ID, m.ID, status); err != nil {
			t.Fatal(err)
		}
		if _, err := e.App.DB.Pool.Exec(ctx, `UPDATE `+org.Tenant.Table("campaign_recipients")+`
			SET status = 'released', message_id = $3, sender_number_id = $4 WHERE campaign_id = $1 AND phone = $2`,
			c.ID, p, m.ID, sender); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.App.DB.Pool.Exec(ctx, `UPDATE `+org.Tenant.Table("campaign_recipients")+`
		SET status = 'skipped', error_code = 'recipient_opted_out' WHERE campaign_id = $1 AND phone = $2`, c.ID, to[2]); err != nil {
		t.Fatal(err)
	}
	got := getCampaign(t, e.Env, key, c.ID)
	want := campaignCounts{Total: 4, Pending: 1, Queued: 1, Failed: 1, Skipped: 1}
	if got.Counts != want || len(got.SkipReasons) != 1 || got.SkipReasons["opted_out"] != 1 {
		t.Fatalf("counts %+v %v, want %+v and opted_out 1", got.Counts, got.SkipReasons, want)
	}
	for status, n := range map[string]int{"": 4, "pending": 1, "queued": 1, "failed": 1, "skipped": 1, "delivered": 0} {
		q := url.Values{}
		if status != "" {
			q.Set("status", status)
		}
		rs := listRecipients(t, e.Env, key, c.ID, q)
		if len(rs) != n {
			t.Fatalf("status %q: %d recipients %+v, want %d", status, len(rs), rs, n)
		}
		for _, r := range rs {
			if status != "" && r.Status != status || (r.Status == "queued" || r.Status == "failed") && r.MessageID == nil {
				t.Fatalf("status %q: recipient %+v", status, r)
			}
		}
	}
	r := e.Do(Request{Method: http.MethodGet, Path: recipientsPath(c.ID) + "?status=released", Header: key})
	if errs := fieldErrors(t, r); len(errs["status"]) == 0 {
		t.Fatalf("errors %v", errs)
	}

	// The history's campaign_id filter, and campaign_id on the message.
	r = e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("%s?campaign_id=%d", messagesPath, c.ID), Header: key})
	var page struct {
		Data []struct {
			CampaignID *int64 `json:"campaign_id"`
		} `json:"data"`
	}
	if r.Status != http.StatusOK {
		t.Fatalf("history = %d %s", r.Status, r.Body)
	}
	r.JSON(t, &page)
	if len(page.Data) != 2 || page.Data[0].CampaignID == nil || *page.Data[0].CampaignID != c.ID {
		t.Fatalf("campaign's messages %s", r.Body)
	}
	other := accepted(t, e.send(org, text(sender, to[3], "not a campaign's")))
	if body := string(e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("%s/%d", messagesPath, other.ID), Header: key}).Body); !strings.Contains(body, `"campaign_id":null`) {
		t.Fatalf("a message outside campaigns: %s", body)
	}
	r = e.Do(Request{Method: http.MethodGet, Path: messagesPath + "?campaign_id=x", Header: key})
	if errs := fieldErrors(t, r); len(errs["campaign_id"]) == 0 {
		t.Fatalf("errors %v", errs)
	}
}

// TestCampaignListsIsolationScope: the list filters by status and pages
// newest first; another organization's campaign is 404 on every route; a
// key without campaigns.manage is 403 on every route.
func TestCampaignListsIsolationScope(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org, other := e.Register(t), e.Register(t)
	key := org.Key()
	sender := e.activeSender(org, phoneN(1))
	var ids []int64
	for i := range 5 {
		c := createCampaign(t, e.Env, key, textCampaign(fmt.Sprintf("c%d", i), sender))
		ids = append(ids, c.ID)
	}
	addPlain(t, e.Env, key, ids[1], phoneN(2))
	campaignOf(t, campaignAction(e.Env, key, ids[1], "start"), http.StatusOK)
	campaignOf(t, campaignAction(e.Env, key, ids[3], "cancel"), http.StatusOK)

	all := listCampaigns(t, e.Env, key, url.Values{"limit": {"2"}})
	var got []int64
	for _, c := range all {
		got = append(got, c.ID)
	}
	if want := []int64{ids[4], ids[3], ids[2], ids[1], ids[0]}; !slices.Equal(got, want) {
		t.Fatalf("list %v, want %v", got, want)
	}
	for status, want := range map[string][]int64{"draft": {ids[4], ids[2], ids[0]}, "running": {ids[1]}, "canceled": {ids[3]}, "paused": nil} {
		got = nil
		for _, c := range listCampaigns(t, e.Env, key, url.Values{"status": {status}}) {
			got = append(got, c.ID)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("status %s: %v, want %v", status, got, want)
		}
	}
	if running := listCampaigns(t, e.Env, key, url.Values{"status": {"running"}}); running[0].Counts.Total != 1 {
		t.Fatalf("listed counts %+v", running[0].Counts)
	}
	for _, q := range []string{"status=sent", "limit=0", "limit=101", "cursor=abc"} {
		r := e.Do(Request{Method: http.MethodGet, Path: campaignsPath + "?" + q, Header: key})
		if r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("%s = %d %s, want 422", q, r.Status, r.Body)
		}
	}

	routes := func(id int64) []Request {
		p := fmt.Sprintf("%s/%d", campaignsPath, id)
		return []Request{
			{Method: http.MethodGet, Path: p},
			{Method: http.MethodGet, Path: p + "/recipients"},
			{Method: http.MethodPost, Path: p + "/recipients", Body: []map[string]string{{"phone": phoneN(9)}}},
			{Method: http.MethodPost, Path: p + "/start"},
			{Method: http.MethodPost, Path: p + "/pause"},
			{Method: http.MethodPost, Path: p + "/resume"},
			{Method: http.MethodPost, Path: p + "/cancel"},
		}
	}
	for _, req := range routes(ids[0]) {
		req.Header = other.Key()
		wantError(t, e.Do(req), http.StatusNotFound, "not_found")
	}
	for _, req := range routes(0) {
		req.Header = key
		wantError(t, e.Do(req), http.StatusNotFound, "not_found")
	}
	noScope := KeyHeader(e.APIKey(t, org, "messages.send", "messages.read", "templates.manage"))
	for _, req := range append(routes(ids[0]), Request{Method: http.MethodGet, Path: campaignsPath},
		Request{Method: http.MethodPost, Path: campaignsPath, Body: textCampaign("x", sender)}) {
		req.Header = noScope
		wantError(t, e.Do(req), http.StatusForbidden, "insufficient_scope")
	}
	scoped := KeyHeader(e.APIKey(t, org, "campaigns.manage"))
	if c := getCampaign(t, e.Env, scoped, ids[0]); c.Status != "draft" {
		t.Fatalf("with campaigns.manage: %+v", c)
	}
	if got := getCampaign(t, e.Env, key, ids[0]); got.Counts.Total != 0 {
		t.Fatalf("another organization's requests changed the campaign: %+v", got)
	}
}
