package integration

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/templates"
)

// postMultipart sends fields and, when fileName is set, a file part
// recipients_file with content, as multipart/form-data (a form with a
// file input).
func (w *webClient) postMultipart(path string, fields url.Values, fileName, content string) *webResponse {
	w.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, vs := range fields {
		for _, v := range vs {
			if err := mw.WriteField(k, v); err != nil {
				w.t.Fatal(err)
			}
		}
	}
	if fileName != "" {
		part, err := mw.CreateFormFile("recipients_file", fileName)
		if err != nil {
			w.t.Fatal(err)
		}
		if _, err := part.Write([]byte(content)); err != nil {
			w.t.Fatal(err)
		}
	}
	if err := mw.Close(); err != nil {
		w.t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(w.t.Context(), http.MethodPost, w.e.Server.URL+path, &body)
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return w.do(req, nil)
}

// wantRedirectTo checks a 303 to a path matching pattern and returns it.
func wantRedirectTo(t *testing.T, r *webResponse, pattern string) string {
	t.Helper()
	loc := r.Header.Get("Location")
	if r.Status != http.StatusSeeOther || !regexp.MustCompile("^"+pattern+"$").MatchString(loc) {
		t.Fatalf("answer %d to %q, want 303 to %s; body: %.800s", r.Status, loc, pattern, r.Body)
	}
	return loc
}

// approvedTemplate creates a template with key and approves it as the
// network's operator would (no workers needed).
func approvedTemplate(t *testing.T, e *msgEnv, org *Org, body map[string]any) template {
	t.Helper()
	tpl := createTemplate(t, e.Env, org.Key(), body)
	if _, _, err := e.App.Templates.SetStatus(context.Background(), org.Tenant, tpl.ID, templates.StatusApproved, ""); err != nil {
		t.Fatal(err)
	}
	return tpl
}

// The dashboard's campaign pages over HTTP: the new-campaign form offers
// the active numbers and approved templates only and shows the service's
// 422s on their fields with the values kept; a CSV file creates the
// recipients with them, its duplicates and invalid rows shown with their
// errors; more rows pasted, a file and rows at once refused, a malformed
// file refused adding nothing; start, with the page reloading itself;
// pause, resume, the progress bar and counts as the release writes them,
// the recipients' filter and paging; cancel after confirmation, and a
// state that does not allow an action shown on the page.
func TestDashboardCampaigns(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org := e.Register(t)
	key := org.Key()
	s1, s2 := e.activeSender(org, phoneN(1)), e.activeSender(org, phoneN(2))
	e.registerSender(org, phoneN(3)) // waiting for its code: not offered
	tpl := approvedTemplate(t, e, org, templateBody("order_update", "en_US"))
	createTemplate(t, e.Env, key, templateBody("not_reviewed", "en")) // pending: not offered

	w := newWebClient(t, e.Env)
	wantPage(t, w.login(org.OwnerEmail, org.OwnerPassword), http.StatusSeeOther)
	token := w.csrf("/campaigns")
	wantPage(t, w.get("/campaigns"), http.StatusOK, `href="/campaigns" aria-current="page"`, "No campaigns yet",
		`href="/campaigns/new"`)
	form := w.get("/campaigns/new")
	wantPage(t, form, http.StatusOK, `enctype="multipart/form-data"`, fmt.Sprintf(`value="%d"`, s1), fmt.Sprintf(`value="%d"`, s2),
		fmt.Sprintf(`<option value="%d">order_update · en_US · utility</option>`, tpl.ID),
		`id="c-kind-template" name="kind" value="template" checked`, `id="c-reserve" name="reserve_percent"`, `value="10"`)
	if strings.Contains(form.Body, "&#43;14155550003") || strings.Contains(form.Body, "not_reviewed") {
		t.Fatal("the form offers a number that is not active or a template that is not approved")
	}
	wantPage(t, w.postMultipart("/campaigns", url.Values{"name": {"x"}}, "", ""), http.StatusForbidden, "Form expired")

	// The service's errors on their fields, the values kept, and a word
	// that the chosen file must be chosen again.
	past := e.Clock.Now().Add(-time.Hour).UTC().Format("2006-01-02T15:04")
	r := w.postMultipart("/campaigns", url.Values{"csrf_token": {token}, "name": {"  "}, "kind": {"template"},
		"send_at": {past}, "reserve_percent": {"ten"}}, "list.csv", "phone\n+14155550010\n")
	wantPage(t, r, http.StatusUnprocessableEntity, "Please correct the fields", `id="c-name-err"`, `id="c-senders-err"`,
		"1 to 50 sender number ids", `id="c-template-err" class="field-error">choose one of the approved templates`,
		`id="c-send-at-err" class="field-error">must be in the future`, `id="c-reserve-err" class="field-error">must be an integer from 0 to 100`,
		`value="ten"`, `id="c-file-note"`, "Choose the file again")
	r = w.postMultipart("/campaigns", url.Values{"csrf_token": {token}, "name": {"Plain"}, "kind": {"text"}, "content": {""},
		"sender_number_ids": {fmt.Sprint(s2)}}, "", "")
	wantPage(t, r, http.StatusUnprocessableEntity, `id="c-content-err"`, `id="c-sender-`+fmt.Sprint(s2)+`" name="sender_number_ids" value="`+fmt.Sprint(s2)+`" checked`,
		`id="c-kind-text" name="kind" value="text" checked`)
	if strings.Contains(r.Body, "c-file-note") {
		t.Fatal("asked to choose again a file that was not chosen")
	}
	r = w.postMultipart("/campaigns", url.Values{"csrf_token": {token}, "name": {"Both"}, "kind": {"text"}, "content": {"Hi."},
		"sender_number_ids": {fmt.Sprint(s2)}, "recipients_csv": {"phone\n+14155550010\n"}}, "list.csv", "phone\n+14155550011\n")
	wantPage(t, r, http.StatusUnprocessableEntity, `<p class="field-error" id="c-file-err">choose a file or paste rows, not both`,
		`value="Both"`)
	wantPage(t, w.get("/campaigns"), http.StatusOK, "No campaigns yet")

	// A template campaign with a CSV file: the rows added, a duplicate and
	// two invalid rows with their errors, in the answer to the form.
	csv := "phone,1,2\n+14155550010,A-1,Ana\n+1 415 555 0011,A-2,Ben\n+14155550012,A-3,Cy\n+14155550010,A-1,Ana\n12345,A-5,Di\n+14155550014,A-6,\n"
	r = w.postMultipart("/campaigns", url.Values{"csrf_token": {token}, "name": {"Order updates"}, "kind": {"template"},
		"template_id": {fmt.Sprint(tpl.ID)}, "sender_number_ids": {fmt.Sprint(s1), fmt.Sprint(s2)}, "reserve_percent": {"20"}},
		"customers.csv", csv)
	wantPage(t, r, http.StatusOK, "Campaign created as a draft. 3 recipients added; 1 duplicate and 2 invalid rows were not.",
		`id="upload-added">3<`, `id="upload-duplicates">1<`, `id="upload-invalid">2<`, `data-row="5"`, `data-row="6"`,
		"variables.2", `id="campaign-status">draft`, `action="/campaigns/`, `/start"`)
	m := regexp.MustCompile(`data-address="(/campaigns/(\d+))"`).FindStringSubmatch(r.Body)
	if m == nil {
		t.Fatalf("the answer does not name the campaign's address: %.2000s", r.Body)
	}
	path := m[1]
	var id int64
	if _, err := fmt.Sscan(m[2], &id); err != nil {
		t.Fatal(err)
	}
	c := getCampaign(t, e.Env, key, id)
	if c.Status != "draft" || c.Counts.Total != 3 || c.ReservePercent != 20 || c.TemplateID == nil || *c.TemplateID != tpl.ID ||
		len(c.SenderNumberIDs) != 2 {
		t.Fatalf("campaign created %+v", c)
	}
	page := w.get(path)
	wantPage(t, page, http.StatusOK, "order_update", "&#43;14155550001, &#43;14155550002", "20% of each number",
		"0 of 3 recipients done (0%)", `data-phone="&#43;14155550011" data-status="pending"`)
	if strings.Contains(page.Body, "data-address") || strings.Contains(page.Body, "http-equiv") || strings.Contains(page.Body, `id="pace"`) {
		t.Fatal("a draft's page names an address, reloads itself or explains a pace")
	}

	// More rows, pasted: every row added. A file and rows at once, an
	// empty form and a malformed file are refused, adding nothing.
	wantRedirect(t, w.postMultipart(path+"/recipients", url.Values{"csrf_token": {token},
		"recipients_csv": {"phone,1,2\n+14155550015,A-7,Eve\n"}}, "", ""), path+"?ok=recipients_added")
	wantPage(t, w.get(path+"?ok=recipients_added"), http.StatusOK, "Recipients added: every row was added.", "0 of 4 recipients")
	wantPage(t, w.postMultipart(path+"/recipients", url.Values{"csrf_token": {token}, "recipients_csv": {"phone\n+14155550016\n"}},
		"more.csv", "phone,1,2\n+14155550016,A,B\n"), http.StatusUnprocessableEntity, `id="c-file-err"`, "not both")
	wantPage(t, w.postMultipart(path+"/recipients", url.Values{"csrf_token": {token}}, "", ""), http.StatusUnprocessableEntity,
		"choose a CSV file, or paste rows")
	wantPage(t, w.postMultipart(path+"/recipients", url.Values{"csrf_token": {token}}, "bad.csv", "mobile,1\n+14155550017,x\n"),
		http.StatusBadRequest, "No recipients were added: The CSV header must start with the column phone.", `aria-invalid="true"`)
	if c := getCampaign(t, e.Env, key, id); c.Counts.Total != 4 {
		t.Fatalf("total %d after refused uploads, want 4", c.Counts.Total)
	}

	// Start: running, the page reloads itself (unless asked not to), and
	// offers pause and cancel; no more recipients.
	wantRedirect(t, w.post(path+"/start", url.Values{"csrf_token": {token}}), path+"?ok=campaign_started")
	page = w.get(path)
	wantPage(t, page, http.StatusOK, `id="campaign-status">running`, `<meta http-equiv="refresh" content="5; url=`+path+`">`,
		`href="`+path+`?refresh=off"`, `action="`+path+`/pause"`, `href="`+path+`/cancel"`)
	if strings.Contains(page.Body, `action="`+path+`/recipients"`) || strings.Contains(page.Body, `action="`+path+`/start"`) {
		t.Fatal("a running campaign is offered start or more recipients")
	}
	// The pace: what the campaign waits for and each number's room; with
	// daily limits of 1, every number is at the campaign's 20% reserve.
	wantPage(t, page, http.StatusOK, `id="pace-waiting">Waiting for nothing: the next tick`,
		fmt.Sprintf(`<tr data-sender="%d" data-room="`, s1), fmt.Sprintf(`<tr data-sender="%d" data-room="`, s2))
	one := 1
	e.setLimit(org, s1, &one)
	e.setLimit(org, s2, &one)
	wantPage(t, w.get(path), http.StatusOK, `id="pace-waiting">Waiting for the next UTC day`,
		fmt.Sprintf(`<tr data-sender="%d" data-room="0">`, s1), "at the campaign&#39;s reserve of its daily limit")
	e.setLimit(org, s1, nil)
	e.setLimit(org, s2, nil)
	off := w.get(path + "?refresh=off")
	wantPage(t, off, http.StatusOK, `id="refresh-on"`)
	if strings.Contains(off.Body, "http-equiv") {
		t.Fatal("?refresh=off still reloads")
	}
	// The recipients' statuses as the release writes them: two released
	// (one read, one failed), one skipped for an opt-out.
	ctx := context.Background()
	for i, p := range []string{"+14155550010", "+14155550011"} {
		e.recipient(p)
		msg := accepted(t, e.send(org, text(s1, p, "Order A-1 ships today.")))
		status := []string{"read", "failed"}[i]
		if _, err := e.App.DB.Pool.Exec(ctx, `UPDATE `+org.Tenant.Table("messages")+` SET campaign_id = $1, status = $3 WHERE id = $2`,
			id, msg.ID, status); err != nil {
			t.Fatal(err)
		}
		if _, err := e.App.DB.Pool.Exec(ctx, `UPDATE `+org.Tenant.Table("campaign_recipients")+`
			SET status = 'released', message_id = $3, sender_number_id = $4 WHERE campaign_id = $1 AND phone = $2`,
			id, p, msg.ID, s1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.App.DB.Pool.Exec(ctx, `UPDATE `+org.Tenant.Table("campaign_recipients")+`
		SET status = 'skipped', error_code = 'recipient_opted_out' WHERE campaign_id = $1 AND phone = '+14155550012'`, id); err != nil {
		t.Fatal(err)
	}
	page = w.get(path)
	wantPage(t, page, http.StatusOK, "3 of 4 recipients done (75%)", `class="s-read" data-status="read" x="0" y="0" width="250"`,
		`<li data-status="failed"><span class="swatch s-failed"></span>failed <strong class="count">1</strong>`,
		`data-reason="opted_out"><code>opted_out</code>: 1`, `class="message-link"`, `data-status="skipped"`,
		fmt.Sprintf(`href="/messages?campaign_id=%d"`, id))
	wantPage(t, w.get(fmt.Sprintf("/messages?campaign_id=%d", id)), http.StatusOK, `value="`+fmt.Sprint(id)+`"`, `data-status="read"`,
		`data-status="failed"`)
	filtered := w.get(path + "?status=skipped")
	wantPage(t, filtered, http.StatusOK, `data-phone="&#43;14155550012"`, `<code class="reason">opted_out</code>`)
	if strings.Contains(filtered.Body, `data-phone="&#43;14155550010"`) {
		t.Fatal("the status filter lets another status through")
	}
	wantPage(t, w.get(path+"?status=released"), http.StatusUnprocessableEntity, `id="f-status-err"`)
	list := w.get("/campaigns")
	wantPage(t, list, http.StatusOK, `class="campaign-link">Order updates`, "3 of 4 recipients done (75%)",
		`<span class="badge info">running</span>`)
	wantPage(t, w.get("/campaigns?status=draft"), http.StatusOK, "No campaigns match these filters")

	// Pause and resume; a state that does not allow an action is shown on
	// the campaign's page, changing nothing.
	wantRedirect(t, w.post(path+"/pause", url.Values{"csrf_token": {token}}), path+"?ok=campaign_paused")
	wantPage(t, w.get(path+"?ok=campaign_paused"), http.StatusOK, `id="campaign-status">paused`, "Campaign paused",
		`action="`+path+`/resume"`)
	wantPage(t, w.post(path+"/pause", url.Values{"csrf_token": {token}}), http.StatusConflict,
		"The campaign is paused, which does not allow pausing it.")
	wantPage(t, w.post(path+"/start", url.Values{"csrf_token": {token}}), http.StatusConflict, "does not allow starting it")
	wantRedirect(t, w.post(path+"/resume", url.Values{"csrf_token": {token}}), path+"?ok=campaign_resumed")

	// Cancel after confirmation: the pending recipient is skipped.
	wantPage(t, w.get(path+"/cancel"), http.StatusOK, "Cancel the campaign <strong>Order updates</strong>", "Its 1 pending recipients",
		`id="confirm-cancel"`)
	wantRedirect(t, w.post(path+"/cancel", url.Values{"csrf_token": {token}}), path+"?ok=campaign_canceled")
	page = w.get(path)
	wantPage(t, page, http.StatusOK, `id="campaign-status">canceled`, "4 of 4 recipients done (100%)", `data-reason="canceled"`)
	if strings.Contains(page.Body, `action="`+path+`/`) || strings.Contains(page.Body, "http-equiv") {
		t.Fatal("a canceled campaign offers an action or reloads itself")
	}
	wantPage(t, w.post(path+"/cancel", url.Values{"csrf_token": {token}}), http.StatusConflict, "does not allow canceling it")

	// A text campaign without recipients: its start is refused on its page;
	// with a send_at, it is scheduled.
	r = w.postMultipart("/campaigns", url.Values{"csrf_token": {token}, "name": {"Later"}, "kind": {"text"},
		"content": {"Our sale starts soon."}, "sender_number_ids": {fmt.Sprint(s1)},
		"send_at": {e.Clock.Now().Add(48 * time.Hour).UTC().Format("2006-01-02T15:04")}}, "", "")
	later := wantRedirectTo(t, r, `/campaigns/\d+\?ok=campaign_created`)
	later = strings.TrimSuffix(later, "?ok=campaign_created")
	wantPage(t, w.get(later+"?ok=campaign_created"), http.StatusOK, "Campaign created as a draft", "Our sale starts soon.",
		`id="no-recipients"`, `id="start-campaign">Schedule`)
	wantPage(t, w.post(later+"/start", url.Values{"csrf_token": {token}}), http.StatusUnprocessableEntity,
		"The campaign has no recipients")
	wantRedirect(t, w.postMultipart(later+"/recipients", url.Values{"csrf_token": {token}}, "one.csv", "phone\n+14155550020\n"),
		later+"?ok=recipients_added")
	wantRedirect(t, w.post(later+"/start", url.Values{"csrf_token": {token}}), later+"?ok=campaign_scheduled")
	page = w.get(later + "?ok=campaign_scheduled")
	wantPage(t, page, http.StatusOK, `id="campaign-status">scheduled`, "Campaign scheduled: it starts by itself at its send time",
		`action="`+later+`/pause"`)
	if strings.Contains(page.Body, "http-equiv") {
		t.Fatal("a campaign scheduled two days ahead reloads itself")
	}

	// A file whose every row is added: the campaign's page opens.
	r = w.postMultipart("/campaigns", url.Values{"csrf_token": {token}, "name": {"Clean"}, "kind": {"text"},
		"content": {"Hello."}, "sender_number_ids": {fmt.Sprint(s2)}}, "clean.csv", "phone\n+14155550030\n+14155550031\n")
	clean := strings.TrimSuffix(wantRedirectTo(t, r, `/campaigns/\d+\?ok=campaign_created_recipients`), "?ok=campaign_created_recipients")
	wantPage(t, w.get(clean+"?ok=campaign_created_recipients"), http.StatusOK, "every row was added", "0 of 2 recipients done")
}

// Campaign pages by role and organization: a member reads the list, a
// campaign and its recipients but is refused every change (and offered
// none); another organization's campaign is 404 on every page and
// action, and unchanged. The list and the recipients page by 25.
func TestDashboardCampaignsRolesIsolation(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org, other := e.Register(t), e.Register(t)
	s := e.activeSender(org, phoneN(1))
	c := createCampaign(t, e.Env, org.Key(), textCampaign("Ours", s))
	addPlain(t, e.Env, org.Key(), c.ID, phoneN(5))
	theirSender := e.activeSender(other, phoneN(2))
	// Ids are per organization: theirs is one ours lacks.
	var theirs campaign
	for theirs.ID <= c.ID {
		theirs = createCampaign(t, e.Env, other.Key(), textCampaign("Theirs", theirSender))
	}
	addPlain(t, e.Env, other.Key(), theirs.ID, phoneN(6))

	w := newWebClient(t, e.Env)
	wantPage(t, w.login(org.OwnerEmail, org.OwnerPassword), http.StatusSeeOther)
	token := w.csrf("/campaigns")
	if strings.Contains(w.get("/campaigns").Body, "Theirs") {
		t.Fatal("our list shows their campaign")
	}
	them := fmt.Sprintf("/campaigns/%d", theirs.ID)
	for _, r := range []*webResponse{w.get(them), w.get(them + "/cancel"), w.post(them+"/start", url.Values{"csrf_token": {token}}),
		w.post(them+"/cancel", url.Values{"csrf_token": {token}}),
		w.postMultipart(them+"/recipients", url.Values{"csrf_token": {token}}, "x.csv", "phone\n+14155550007\n"),
		w.get("/campaigns/abc"), w.get("/campaigns/0")} {
		wantPage(t, r, http.StatusNotFound, "Not found")
	}
	if got := getCampaign(t, e.Env, other.Key(), theirs.ID); got.Status != "draft" || got.Counts.Total != 1 {
		t.Fatalf("their campaign after our attempts: %+v", got)
	}

	email := uniqueEmail("member")
	wantRedirect(t, w.post("/members", url.Values{"csrf_token": {token}, "name": {"Mia Member"}, "email": {email},
		"role": {"member"}, "password": {"initial password 1"}}), "/members?ok=member_added")
	member := newWebClient(t, e.Env)
	wantPage(t, member.login(email, "initial password 1"), http.StatusSeeOther)
	ours := fmt.Sprintf("/campaigns/%d", c.ID)
	list := member.get("/campaigns")
	wantPage(t, list, http.StatusOK, `class="campaign-link">Ours`, "Only owners and admins can create and run campaigns")
	page := member.get(ours)
	wantPage(t, page, http.StatusOK, `data-phone="&#43;14155550005"`)
	if strings.Contains(list.Body, `href="/campaigns/new"`) || strings.Contains(page.Body, `method="post" action="/campaigns/`) ||
		strings.Contains(page.Body, `/cancel"`) {
		t.Fatal("a member is offered a change")
	}
	mToken := member.csrf("/campaigns")
	for _, r := range []*webResponse{member.get("/campaigns/new"), member.get(ours + "/cancel"),
		member.postMultipart("/campaigns", url.Values{"csrf_token": {mToken}, "name": {"Mine"}}, "", ""),
		member.postMultipart(ours+"/recipients", url.Values{"csrf_token": {mToken}}, "x.csv", "phone\n+14155550008\n"),
		member.post(ours+"/start", url.Values{"csrf_token": {mToken}}), member.post(ours+"/cancel", url.Values{"csrf_token": {mToken}})} {
		wantPage(t, r, http.StatusForbidden, "Only owners and admins")
	}
	if got := getCampaign(t, e.Env, org.Key(), c.ID); got.Status != "draft" || got.Counts.Total != 1 {
		t.Fatalf("our campaign after the member's attempts: %+v", got)
	}
	if n := len(listCampaigns(t, e.Env, org.Key(), url.Values{})); n != 1 {
		t.Fatalf("%d campaigns after the member's attempts", n)
	}

	// Paging, 25 a page: the list, and a campaign's recipients with their
	// status filter kept.
	for i := range 25 {
		createCampaign(t, e.Env, org.Key(), textCampaign(fmt.Sprintf("Bulk %02d", i), s))
	}
	phones := make([]string, 25)
	for i := range phones {
		phones[i] = fmt.Sprintf("+1415555%04d", 100+i)
	}
	addPlain(t, e.Env, org.Key(), c.ID, phones...)
	next := func(body string) string {
		t.Helper()
		m := regexp.MustCompile(`href="([^"]+)" class="button secondary" id="next-page"`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no next page: %.3000s", body)
		}
		return strings.ReplaceAll(m[1], "&amp;", "&")
	}
	rows := regexp.MustCompile(`<tr (id="campaign-\d+"|data-phone=)`)
	first := member.get("/campaigns")
	if n := len(rows.FindAllString(first.Body, -1)); n != 25 || strings.Contains(first.Body, `class="campaign-link">Ours`) {
		t.Fatalf("first page: %d campaigns", n)
	}
	second := member.get(next(first.Body))
	if n := len(rows.FindAllString(second.Body, -1)); n != 1 || !strings.Contains(second.Body, `class="campaign-link">Ours`) ||
		strings.Contains(second.Body, `id="next-page"`) {
		t.Fatalf("second page: %d campaigns: %.2000s", n, second.Body)
	}
	first = member.get(ours + "?status=pending")
	if n := len(rows.FindAllString(first.Body, -1)); n != 25 {
		t.Fatalf("first page of recipients: %d", n)
	}
	link := next(first.Body)
	if !strings.Contains(link, "status=pending") || !strings.HasSuffix(link, "#recipients-h") {
		t.Fatalf("next page of recipients %q", link)
	}
	second = member.get(link)
	if n := len(rows.FindAllString(second.Body, -1)); n != 1 || !strings.Contains(second.Body, `data-phone="&#43;14155550005"`) {
		t.Fatalf("second page of recipients: %d", n)
	}
}

// The history shows scheduled messages with their time and a Cancel
// button on each, which cancels that message only; a canceled one keeps
// its time, loses the button, and is found by the canceled filter. A
// campaign's message links its campaign.
func TestDashboardScheduledInHistory(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	due := e.Clock.Now().Add(2 * time.Hour).UTC().Truncate(time.Minute)
	first := e.mustSchedule(org, scheduled(sid, phoneN(2), "Dinner at 8", due))
	second := e.mustSchedule(org, scheduled(sid, phoneN(3), "Lunch at 1", due.Add(time.Hour)))

	w := newWebClient(t, e.Env)
	wantPage(t, w.login(org.OwnerEmail, org.OwnerPassword), http.StatusSeeOther)
	list := w.get("/messages")
	wantPage(t, list, http.StatusOK, `class="muted send-at">for `+due.Format("2006-01-02 15:04 UTC"),
		fmt.Sprintf(`action="/messages/%d/cancel"`, first.ID), fmt.Sprintf(`action="/messages/%d/cancel"`, second.ID),
		`<span class="badge warn">scheduled</span>`)
	token := w.csrf("/messages")
	wantRedirect(t, w.post(fmt.Sprintf("/messages/%d/cancel", first.ID), url.Values{"csrf_token": {token}}),
		fmt.Sprintf("/messages/%d?ok=message_canceled", first.ID))
	list = w.get("/messages")
	wantPage(t, list, http.StatusOK, `<span class="badge off">canceled</span>`, fmt.Sprintf(`action="/messages/%d/cancel"`, second.ID))
	if strings.Contains(list.Body, fmt.Sprintf(`action="/messages/%d/cancel"`, first.ID)) {
		t.Fatal("a canceled message still offers Cancel")
	}
	if got := e.getScheduled(org, second.ID); got.Status != "scheduled" {
		t.Fatalf("the other message is %s after one was canceled", got.Status)
	}
	canceled := w.get("/messages?status=canceled")
	wantPage(t, canceled, http.StatusOK, "Dinner at 8", `class="muted send-at">for `)
	if strings.Contains(canceled.Body, "Lunch at 1") {
		t.Fatal("the canceled filter lets a scheduled message through")
	}

	// A campaign's message names its campaign in the list and on its page.
	c := createCampaign(t, e.Env, org.Key(), textCampaign("Linked", sid))
	e.recipient(phoneN(4))
	m := accepted(t, e.send(org, text(sid, phoneN(4), "Our sale starts today.")))
	if _, err := e.App.DB.Pool.Exec(context.Background(), `UPDATE `+org.Tenant.Table("messages")+` SET campaign_id = $1 WHERE id = $2`,
		c.ID, m.ID); err != nil {
		t.Fatal(err)
	}
	link := fmt.Sprintf(`href="/campaigns/%d"`, c.ID)
	wantPage(t, w.get("/messages"), http.StatusOK, link)
	wantPage(t, w.get(fmt.Sprintf("/messages/%d", m.ID)), http.StatusOK, link+` id="message-campaign"`)
}
