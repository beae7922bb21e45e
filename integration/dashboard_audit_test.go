package integration

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// The dashboard's audit page: owners and admins read the log with the
// API's filters (the nav links to it for them only); a member gets 403;
// a bad filter is shown on its field.
func TestDashboardAuditPage(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	owner := newWebClient(t, e)
	acct := owner.signup()
	token := owner.csrf("/keys")
	if r := owner.post("/keys", url.Values{"csrf_token": {token}, "name": {"Invoices"}, "scopes": {"usage.read"}}); r.Status != http.StatusOK {
		t.Fatalf("create key = %d %.500s", r.Status, r.Body)
	}
	email := uniqueEmail("member")
	if r := owner.post("/members", url.Values{"csrf_token": {token}, "name": {"Mia Member"}, "email": {email},
		"role": {"member"}, "password": {"initial password 1"}}); r.Status != http.StatusSeeOther {
		t.Fatalf("add member = %d %.500s", r.Status, r.Body)
	}

	rows := regexp.MustCompile(`<tr id="entry-\d+" data-action="([a-z_.]+)" data-actor="([a-z_]+)"`)
	actions := func(body string) []string {
		var out []string
		for _, m := range rows.FindAllStringSubmatch(body, -1) {
			out = append(out, m[1]+" by "+m[2])
		}
		return out
	}
	tests := []struct {
		name, query string
		want        []string
		contains    []string
	}{
		{"everything", "", []string{"member.add by user", "api_key.create by user"},
			[]string{"Web Owner (user ", "API key ", "name: Invoices", "scopes: usage.read", "email: " + email, `aria-current="page">Audit log`}},
		{"a family", "?action=api_key", []string{"api_key.create by user"}, []string{`<option value="api_key" selected>`}},
		{"the network", "?actor=network", nil, []string{"Nothing matches these filters"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWebClient(t, e) // a client is one browser: not shared between goroutines
			if r := w.login(acct.Email, acct.Password); r.Status != http.StatusSeeOther {
				t.Fatalf("owner login = %d", r.Status)
			}
			r := w.get("/audit" + tt.query)
			wantPage(t, r, http.StatusOK, tt.contains...)
			if got := actions(r.Body); strings.Join(got, "; ") != strings.Join(tt.want, "; ") {
				t.Fatalf("rows %q, want %q", got, tt.want)
			}
		})
	}
	r := owner.get("/audit?actor=nobody&since=soon")
	wantPage(t, r, http.StatusUnprocessableEntity, "Please correct the fields", `id="actor-err"`, `id="since-err"`, `value="nobody"`)

	member := newWebClient(t, e)
	if r := member.login(email, "initial password 1"); r.Status != http.StatusSeeOther {
		t.Fatalf("member login = %d", r.Status)
	}
	if home := member.get("/"); strings.Contains(home.Body, `href="/audit"`) {
		t.Fatal("a member's navigation links to the audit log")
	}
	if home := owner.get("/"); !strings.Contains(home.Body, `href="/audit"`) {
		t.Fatal("the owner's navigation lacks the audit log")
	}
	wantPage(t, member.get("/audit"), http.StatusForbidden, "Only owners and admins can read the audit log.")
}
