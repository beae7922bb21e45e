package integration

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/webhooks"
)

// The dashboard's webhooks pages over HTTP: forms refused without the CSRF
// token, the service's 422s next to the add form, the secret on the
// creation and rotation answers only, another organization's endpoint 404
// for every page and action, a platform-disabled endpoint's reason, the
// enable/disable/delete actions, and members reading without managing.
func TestDashboardWebhooks(t *testing.T) {
	t.Parallel()
	// A secret is base64: html/template writes its '+' as "&#43;", so pages
	// are read unescaped.
	secretRE := regexp.MustCompile(`whsec_[A-Za-z0-9+/=]+`)
	findSecret := func(body string) string { return secretRE.FindString(html.UnescapeString(body)) }
	e := Start(t, Options{}) // private addresses refused, as in production
	org, other := e.Register(t), e.Register(t)
	w := newWebClient(t, e)
	wantPage(t, w.login(org.OwnerEmail, org.OwnerPassword), http.StatusSeeOther)
	token := w.csrf("/webhooks")
	page := w.get("/webhooks")
	wantPage(t, page, http.StatusOK, `href="/webhooks" aria-current="page"`, "No webhook endpoints yet", `action="/webhooks"`)
	if all := len(webhooks.EventTypes()); strings.Count(page.Body, `name="events"`) != all || strings.Count(page.Body, " checked>") != all {
		t.Fatalf("the add form has not %d event boxes, all ticked: %s", all, page.Body)
	}

	for _, tc := range []struct {
		name   string
		form   url.Values
		status int
		want   []string
	}{
		{"no CSRF token", url.Values{"url": {"https://example.com/a"}, "events": {"message.sent"}},
			http.StatusForbidden, []string{"Form expired"}},
		{"a wrong CSRF token", url.Values{"csrf_token": {strings.Repeat("A", len(token))}, "url": {"https://example.com/a"}},
			http.StatusForbidden, []string{"Form expired"}},
		{"a private address", url.Values{"csrf_token": {token}, "url": {"http://127.0.0.1:9/hooks"}, "description": {"kept <b>"},
			"events": {"message.sent"}}, http.StatusUnprocessableEntity,
			[]string{"Please correct the fields", `id="url-err"`, "must not point to localhost", "WEBHOOK_ALLOW_PRIVATE=true", `value="http://127.0.0.1:9/hooks"`,
				`value="kept &lt;b&gt;"`, `aria-invalid="true"`}},
		{"an unknown event", url.Values{"csrf_token": {token}, "url": {"https://example.com/a"}, "events": {"message.sent", "message.bounced"}},
			http.StatusUnprocessableEntity, []string{`id="events-err"`, `unknown event type &#34;message.bounced&#34;`}},
		{"no event ticked", url.Values{"csrf_token": {token}, "url": {"https://example.com/a"}},
			http.StatusUnprocessableEntity, []string{`id="events-err"`, "at least one event type"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantPage(t, w.post("/webhooks", tc.form), tc.status, tc.want...)
		})
	}
	if strings.Contains(w.get("/webhooks").Body, "webhook-link") {
		t.Fatal("a refused form added an endpoint")
	}

	// Added: the secret is in the answer to the POST, and nowhere after.
	r := w.post("/webhooks", url.Values{"csrf_token": {token}, "url": {"https://example.com/hooks"}, "description": {"Orders"},
		"events": {"message.delivered", "message.sent"}})
	wantPage(t, r, http.StatusOK, "Endpoint added", `id="webhook-secret"`, "message.sent", "message.delivered")
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("the secret's page has Cache-Control %q", cc)
	}
	secret := findSecret(r.Body)
	m := regexp.MustCompile(`href="/webhooks/(\d+)" id="webhook-done"`).FindStringSubmatch(r.Body)
	if secret == "" || m == nil {
		t.Fatalf("no secret or endpoint link on %s", r.Body)
	}
	path := "/webhooks/" + m[1]
	for _, p := range []string{"/webhooks", path, path + "/delete"} {
		if page := w.get(p); page.Status != http.StatusOK || findSecret(page.Body) != "" {
			t.Fatalf("GET %s = %d, shows a secret: %v", p, page.Status, findSecret(page.Body) != "")
		}
	}
	wantPage(t, w.get(path), http.StatusOK, "https://example.com/hooks", "Orders", `id="no-deliveries"`, `action="`+path+`/rotate"`)
	wantPage(t, w.get(path+"?state=bogus"), http.StatusUnprocessableEntity, `id="state-err"`, "must be one of pending, succeeded, failed")
	wantPage(t, w.post(path+"/deliveries/redeliver", url.Values{"csrf_token": {token}, "since": {"last week"}}),
		http.StatusUnprocessableEntity, `id="since-err"`, "must be a date and time")
	r = w.post(path+"/deliveries/redeliver", url.Values{"csrf_token": {token}, "since": {"2020-01-01T00:00"}})
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != path+"?ok=nothing_to_redeliver#deliveries" {
		t.Fatalf("redeliver failed = %d %s", r.Status, r.Header.Get("Location"))
	}

	// Rotation shows a new secret once and says how long the old one signs.
	r = w.post(path+"/rotate", url.Values{"csrf_token": {token}})
	wantPage(t, r, http.StatusOK, "New secret made", "keeps signing for 24 hours more")
	if rotated := findSecret(r.Body); rotated == "" || rotated == secret {
		t.Fatalf("rotated secret %q (was %q)", rotated, secret)
	}
	if findSecret(w.get(path).Body) != "" {
		t.Fatal("the endpoint page shows the rotated secret")
	}

	// Disabled by request, then enabled again.
	r = w.post(path+"/disable", url.Values{"csrf_token": {token}})
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != path+"?ok=webhook_disabled" {
		t.Fatalf("disable = %d %s", r.Status, r.Header.Get("Location"))
	}
	wantPage(t, w.get(path+"?ok=webhook_disabled"), http.StatusOK, "Endpoint disabled", `id="disabled-reason"`,
		"Enable the endpoint to redeliver", `action="`+path+`/enable"`)
	r = w.post(path+"/enable", url.Values{"csrf_token": {token}})
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != path+"?ok=webhook_enabled" {
		t.Fatalf("enable = %d %s", r.Status, r.Header.Get("Location"))
	}
	if page := w.get(path); strings.Contains(page.Body, "disabled-reason") || !strings.Contains(page.Body, `data-enabled="true"`) {
		t.Fatal("the endpoint is still disabled")
	}

	// The platform disabled it after sustained failure: the reason shows
	// on the list and on its page.
	const reason = "Disabled after every delivery attempt failed for 24 hours; the last one: HTTP 503."
	if _, err := e.App.DB.Pool.Exec(context.Background(), fmt.Sprintf(
		`UPDATE %s SET enabled = false, disabled_reason = $1 WHERE id = $2`, org.Tenant.Table("webhook_endpoints")), reason, m[1]); err != nil {
		t.Fatal(err)
	}
	wantPage(t, w.get("/webhooks"), http.StatusOK, `data-enabled="false"`, "Disabled:", reason)
	wantPage(t, w.get(path), http.StatusOK, `id="disabled-reason"`, reason, "Fix the receiver")

	// Another organization's endpoint is 404 on every page and action, and
	// stays as it was. (Ids are per organization: theirs is one that ours
	// does not have.)
	ours, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	var theirs webhookEndpoint
	for theirs.ID <= ours {
		theirs = createWebhook(t, e, other.Key(), map[string]any{"url": "https://example.org/theirs"})
	}
	them := fmt.Sprintf("/webhooks/%d", theirs.ID)
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, them}, {http.MethodGet, them + "/delete"}, {http.MethodPost, them + "/rotate"},
		{http.MethodPost, them + "/disable"}, {http.MethodPost, them + "/enable"}, {http.MethodPost, them + "/delete"},
		{http.MethodPost, them + "/deliveries/redeliver"}, {http.MethodPost, them + "/deliveries/1/redeliver"},
		{http.MethodGet, "/webhooks/abc"}, {http.MethodGet, "/webhooks/0"},
	} {
		var r *webResponse
		if tc.method == http.MethodGet {
			r = w.get(tc.path)
		} else {
			r = w.post(tc.path, url.Values{"csrf_token": {token}, "since": {"2020-01-01T00:00"}})
		}
		wantPage(t, r, http.StatusNotFound, "Not found")
	}
	got := e.Do(Request{Method: http.MethodGet, Path: "/api/v1" + them, Header: other.Key()})
	if got.Status != http.StatusOK || !strings.Contains(string(got.Body), `"enabled":true`) {
		t.Fatalf("their endpoint after the attempts: %d %s", got.Status, got.Body)
	}

	// A member reads the endpoints and their logs, and changes nothing.
	email := uniqueEmail("member")
	if r := w.post("/members", url.Values{"csrf_token": {token}, "name": {"Mia Member"}, "email": {email},
		"role": {"member"}, "password": {"initial password 1"}}); r.Status != http.StatusSeeOther {
		t.Fatalf("add member = %d %.300s", r.Status, r.Body)
	}
	member := newWebClient(t, e)
	wantPage(t, member.login(email, "initial password 1"), http.StatusSeeOther)
	list := member.get("/webhooks")
	wantPage(t, list, http.StatusOK, "https://example.com/hooks", "you can read them")
	if strings.Contains(list.Body, `action="/webhooks"`) {
		t.Fatal("a member sees the add form")
	}
	wantPage(t, member.get(path), http.StatusOK, reason, "Owners and admins can send failed deliveries again")
	mToken := member.csrf("/webhooks")
	for _, p := range []string{"/webhooks", path + "/rotate", path + "/enable", path + "/delete", path + "/deliveries/redeliver"} {
		wantPage(t, member.post(p, url.Values{"csrf_token": {mToken}, "url": {"https://example.com/m"}, "since": {"2020-01-01T00:00"}}),
			http.StatusForbidden, "Only owners and admins")
	}
	wantPage(t, member.get(path+"/delete"), http.StatusForbidden, "Only owners and admins")

	// Deleted after confirmation: gone from the list, its page 404.
	wantPage(t, w.get(path+"/delete"), http.StatusOK, "Delete the webhook endpoint", `id="confirm-delete"`)
	r = w.post(path+"/delete", url.Values{"csrf_token": {token}})
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/webhooks?ok=webhook_deleted" {
		t.Fatalf("delete = %d %s", r.Status, r.Header.Get("Location"))
	}
	wantPage(t, w.get("/webhooks?ok=webhook_deleted"), http.StatusOK, "Webhook endpoint deleted", "No webhook endpoints yet")
	wantPage(t, w.get(path), http.StatusNotFound, "Not found")
}
