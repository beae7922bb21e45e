package integration

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/consent"
)

// unescaped is r with its body's HTML entities decoded: html/template
// writes a phone's '+' as "&#43;".
func unescaped(r *webResponse) *webResponse {
	return &webResponse{Status: r.Status, Header: r.Header, Body: html.UnescapeString(r.Body)}
}

// wantRedirect checks that r is the 303 of a successful form to location.
func wantRedirect(t *testing.T, r *webResponse, location string) {
	t.Helper()
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != location {
		t.Fatalf("= %d to %q, want 303 to %q; body: %.600s", r.Status, r.Header.Get("Location"), location, r.Body)
	}
}

// The dashboard's opt-outs page over HTTP: a keyword entry with its
// sender number, forms refused without the CSRF token, add (and the same
// phone again), the service's 422s next to their fields with the values
// kept, filters and paging, the confirmation texts (their defaults shown
// while unset), remove after confirmation (audited), another
// organization's list never shown nor changed, and members reading only.
func TestDashboardOptOuts(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true})
	org, other := e.Register(t), e.Register(t)
	sender, stopper := phoneN(1), phoneN(2)
	e.activeSender(org, sender)
	e.recipient(stopper)
	e.writeTo(org, stopper, sender, "Stop")

	w := newWebClient(t, e.Env)
	wantPage(t, w.login(org.OwnerEmail, org.OwnerPassword), http.StatusSeeOther)
	token := w.csrf("/opt-outs")
	page := unescaped(w.get("/opt-outs"))
	wantPage(t, page, http.StatusOK, `href="/opt-outs" aria-current="page"`, `method="post" action="/opt-outs"`, `action="/opt-outs/settings"`,
		`data-phone="`+stopper+`" data-source="keyword"`, "<code>STOP</code>", sender,
		// Unset, the texts in force are the English defaults.
		">"+consent.DefaultOptOutReply+"</textarea>", ">"+consent.DefaultOptInReply+"</textarea>", "You have not set this text")

	// Refused forms change nothing.
	const added = "+14155550100"
	for _, tc := range []struct {
		name, path string
		form       url.Values
		header     map[string]string
	}{
		{"add without a token", "/opt-outs", url.Values{"phone": {added}}, nil},
		{"add with a wrong token", "/opt-outs", url.Values{"phone": {added}, "csrf_token": {strings.Repeat("A", len(token))}}, nil},
		{"add from another site", "/opt-outs", url.Values{"phone": {added}, "csrf_token": {token}}, map[string]string{"Origin": "https://evil.example"}},
		{"texts without a token", "/opt-outs/settings", url.Values{"opt_out_reply": {"x"}, "opt_in_reply": {"y"}}, nil},
		{"remove without a token", "/opt-outs/remove", url.Values{"phone": {stopper}}, nil},
		{"remove cross-site", "/opt-outs/remove", url.Values{"phone": {stopper}, "csrf_token": {token}}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantPage(t, w.post(tc.path, tc.form, tc.header), http.StatusForbidden, "Form expired")
		})
	}
	list, _ := e.optOuts(org, nil)
	if len(list) != 1 || list[0].Phone != stopper {
		t.Fatalf("after the refused forms the list is %+v", list)
	}
	wantPage(t, w.get("/opt-outs"), http.StatusOK, "You have not set this text")

	// The service's 422s, on their fields, with the values kept.
	wantPage(t, unescaped(w.post("/opt-outs", url.Values{"csrf_token": {token}, "phone": {"not a phone"}, "note": {"kept <b>"}})),
		http.StatusUnprocessableEntity, "Please correct the fields", `id="o-phone-err"`, `aria-invalid="true"`,
		`value="not a phone"`, `value="kept <b>"`)
	wantPage(t, w.post("/opt-outs", url.Values{"csrf_token": {token}, "phone": {""}}),
		http.StatusUnprocessableEntity, `id="o-phone-err" class="field-error">is required`)
	wantPage(t, w.post("/opt-outs", url.Values{"csrf_token": {token}, "phone": {added}, "note": {strings.Repeat("n", consent.MaxNoteLength+1)}}),
		http.StatusUnprocessableEntity, `id="o-note-err"`)

	// Added, then the same phone again: the entry stays as it was.
	wantRedirect(t, w.post("/opt-outs", url.Values{"csrf_token": {token}, "phone": {added}, "note": {"Asked by phone"}}), "/opt-outs?ok=opt_out_added")
	wantRedirect(t, w.post("/opt-outs", url.Values{"csrf_token": {token}, "phone": {" " + added + " "}, "note": {"again"}}), "/opt-outs?ok=opt_out_exists")
	page = unescaped(w.get("/opt-outs?ok=opt_out_exists"))
	wantPage(t, page, http.StatusOK, "on the opt-out list already", `data-phone="`+added+`" data-source="dashboard"`, "Asked by phone")
	if strings.Contains(page.Body, ">again<") {
		t.Fatal("a second add changed the note")
	}
	list, _ = e.optOuts(org, url.Values{"source": {consent.SourceDashboard}})
	if len(list) != 1 || list[0].Phone != added || list[0].Note == nil || *list[0].Note != "Asked by phone" {
		t.Fatalf("the API's list of dashboard entries = %+v", list)
	}

	// Filters are the API's, errors on the filter form's own fields.
	page = unescaped(w.get("/opt-outs?source=dashboard"))
	if !strings.Contains(page.Body, `data-phone="`+added+`"`) || strings.Contains(page.Body, `data-phone="`+stopper+`"`) {
		t.Fatalf("source filter: %.2000s", page.Body)
	}
	page = unescaped(w.get("/opt-outs?phone=" + url.QueryEscape(stopper)))
	if !strings.Contains(page.Body, `data-phone="`+stopper+`"`) || strings.Contains(page.Body, `data-phone="`+added+`"`) {
		t.Fatalf("phone filter: %.2000s", page.Body)
	}
	wantPage(t, w.get("/opt-outs?phone=12"), http.StatusUnprocessableEntity, `id="f-phone-err"`)
	wantPage(t, w.get("/opt-outs?source=carrier"), http.StatusUnprocessableEntity, `id="f-source-err"`, "must be keyword, api or dashboard")
	wantPage(t, w.get("/opt-outs?phone=%2B14155559999"), http.StatusOK, "No one matches these filters")

	// Paging: 25 a page, newest first, filters kept on the next page.
	for i := range 26 {
		r := e.Do(Request{Method: http.MethodPost, Path: optOutsPath, Header: org.Key(), Body: map[string]any{"phone": phoneN(200 + i)}})
		if r.Status != http.StatusCreated {
			t.Fatalf("add through the API = %d %s", r.Status, r.Body)
		}
	}
	page = unescaped(w.get("/opt-outs?source=api"))
	m := regexp.MustCompile(`href="([^"]+)" class="button secondary" id="next-page"`).FindStringSubmatch(page.Body)
	if m == nil {
		t.Fatalf("no next page of 26 api entries: %.3000s", page.Body)
	}
	next := m[1]
	if n := strings.Count(page.Body, `data-source="api"`); n != 25 || !strings.Contains(page.Body, phoneN(225)) || strings.Contains(page.Body, phoneN(200)) ||
		!strings.Contains(next, "source=api") {
		t.Fatalf("first page: %d api rows, next %q", n, next)
	}
	page = unescaped(w.get(next))
	if n := strings.Count(page.Body, `data-phone=`); n != 1 || !strings.Contains(page.Body, phoneN(200)) ||
		strings.Contains(page.Body, `id="next-page"`) || !strings.Contains(page.Body, `href="/opt-outs?source=api#opt-outs-h"`) {
		t.Fatalf("second page of 26 api entries has %d rows: %.3000s", n, page.Body)
	}

	// Confirmation texts: saved as typed, "" sends none; too long is
	// refused on its field.
	long := strings.Repeat("x", consent.MaxReplyLength+1)
	wantPage(t, w.post("/opt-outs/settings", url.Values{"csrf_token": {token}, "opt_out_reply": {long}, "opt_in_reply": {"kept"}}),
		http.StatusUnprocessableEntity, `id="opt-out-reply-err"`, ">"+long+"</textarea>", ">kept</textarea>")
	wantRedirect(t, w.post("/opt-outs/settings", url.Values{"csrf_token": {token}, "opt_out_reply": {" Bye from Acme. "}, "opt_in_reply": {""}}),
		"/opt-outs?ok=replies_saved#replies-h")
	wantPage(t, w.get("/opt-outs?ok=replies_saved"), http.StatusOK, "Confirmation texts saved",
		">Bye from Acme.</textarea>", `name="opt_in_reply" rows="3"`, "></textarea>", "The English default")
	r := e.Do(Request{Method: http.MethodGet, Path: optOutsPath + "/settings", Header: org.Key()})
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"opt_out_reply":"Bye from Acme.","opt_in_reply":""`) {
		t.Fatalf("settings through the API = %d %s", r.Status, r.Body)
	}

	// Remove after confirmation; the removal is audited as the member's.
	confirm := "/opt-outs/remove?phone=" + url.QueryEscape(added)
	wantPage(t, unescaped(w.get("/opt-outs?source=dashboard")), http.StatusOK, `href="`+confirm+`"`)
	wantPage(t, unescaped(w.get(confirm)), http.StatusOK, "Take <strong>"+added+"</strong> off", `id="confirm-remove"`,
		`name="phone" value="`+added+`"`)
	wantRedirect(t, w.post("/opt-outs/remove", url.Values{"csrf_token": {token}, "phone": {added}}), "/opt-outs?ok=opt_out_removed")
	wantPage(t, w.get("/opt-outs?ok=opt_out_removed"), http.StatusOK, "Phone removed")
	wantPage(t, w.get("/opt-outs?source=dashboard"), http.StatusOK, "No one matches these filters")
	var actor string
	if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT actor_type || ':' || coalesce(actor_user_id::text, '')
		FROM central.audit_log WHERE organization_id = $1 AND action = 'opt_out.remove'`, org.ID).Scan(&actor); err != nil {
		t.Fatalf("audit entry of the removal: %v", err)
	}
	if want := "user:" + strconv.FormatInt(org.OwnerID, 10); actor != want {
		t.Fatalf("removal audited as %q, want %q", actor, want)
	}
	wantPage(t, w.get(confirm), http.StatusNotFound, "Not found")
	wantPage(t, w.post("/opt-outs/remove", url.Values{"csrf_token": {token}, "phone": {added}}), http.StatusNotFound, "Not found")
	wantPage(t, w.post("/opt-outs/remove", url.Values{"csrf_token": {token}, "phone": {"junk"}}), http.StatusUnprocessableEntity,
		"Not removed: the phone")

	// Another organization's entries are never shown, and its entry
	// survives our attempts.
	const theirs = "+14155550300"
	if r := e.Do(Request{Method: http.MethodPost, Path: optOutsPath, Header: other.Key(), Body: map[string]any{"phone": theirs, "note": "their note"}}); r.Status != http.StatusCreated {
		t.Fatalf("their add = %d %s", r.Status, r.Body)
	}
	for _, p := range []string{"/opt-outs", "/opt-outs?phone=" + url.QueryEscape(theirs), "/opt-outs?source=api"} {
		// (The phone filter's field shows the phone asked for.)
		if body := unescaped(w.get(p)).Body; strings.Contains(body, `data-phone="`+theirs) || strings.Contains(body, "their note") {
			t.Fatalf("GET %s shows the other organization's entry", p)
		}
	}
	wantPage(t, w.get("/opt-outs/remove?phone="+url.QueryEscape(theirs)), http.StatusNotFound, "Not found")
	wantPage(t, w.post("/opt-outs/remove", url.Values{"csrf_token": {token}, "phone": {theirs}}), http.StatusNotFound, "Not found")
	if list, _ := e.optOuts(other, nil); len(list) != 1 || list[0].Phone != theirs {
		t.Fatalf("their list after our attempts = %+v", list)
	}

	// A member reads the list and changes nothing.
	email := uniqueEmail("member")
	wantRedirect(t, w.post("/members", url.Values{"csrf_token": {token}, "name": {"Mia Member"}, "email": {email},
		"role": {"member"}, "password": {"initial password 1"}}), "/members?ok=member_added")
	member := newWebClient(t, e.Env)
	wantPage(t, member.login(email, "initial password 1"), http.StatusSeeOther)
	page = unescaped(member.get("/opt-outs?source=keyword"))
	wantPage(t, page, http.StatusOK, `data-phone="`+stopper+`"`, "you can read the list")
	for _, form := range []string{`method="post" action="/opt-outs"`, `action="/opt-outs/settings"`, "/opt-outs/remove"} {
		if strings.Contains(page.Body, form) {
			t.Fatalf("a member sees %s", form)
		}
	}
	mToken := member.csrf("/opt-outs")
	for _, p := range []string{"/opt-outs", "/opt-outs/remove", "/opt-outs/settings"} {
		wantPage(t, member.post(p, url.Values{"csrf_token": {mToken}, "phone": {stopper}, "opt_out_reply": {"x"}}),
			http.StatusForbidden, "Only owners and admins")
	}
	wantPage(t, member.get("/opt-outs/remove?phone="+url.QueryEscape(stopper)), http.StatusForbidden, "Only owners and admins")
	if list, _ := e.optOuts(org, url.Values{"phone": {stopper}}); len(list) != 1 {
		t.Fatalf("the member's attempts removed %s", stopper)
	}
}
