package integration

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

var memberRowRE = regexp.MustCompile(`(?s)<tr id="member-(\d+)">(.*?)</tr>`)

// removable returns, for each member's email on the members page, whether
// the page offers "Remove" on their row.
func (w *webClient) removable() map[string]bool {
	w.t.Helper()
	r := w.get("/members")
	wantPage(w.t, r, http.StatusOK)
	out := map[string]bool{}
	for _, m := range memberRowRE.FindAllStringSubmatch(r.Body, -1) {
		email := regexp.MustCompile(`<td>([^<]+@[^<]+)</td>`).FindStringSubmatch(m[2])
		if email == nil {
			w.t.Fatalf("member row without an email: %s", m[2])
		}
		out[email[1]] = strings.Contains(m[2], `href="/members/`+m[1]+`/remove"`)
	}
	return out
}

// addMember adds a member with a role through the members form.
func (w *webClient) addMember(name, role string) string {
	w.t.Helper()
	email := uniqueEmail(role)
	r := w.post("/members", url.Values{"csrf_token": {w.csrf("/members")}, "name": {name}, "email": {email},
		"role": {role}, "password": {"initial password 1"}})
	if r.Status != http.StatusSeeOther {
		w.t.Fatalf("add %s = %d %.300s", role, r.Status, r.Body)
	}
	return email
}

// The members page offers "Remove" only where removing would succeed: not
// on the only owner (the API answers last_owner), not on an owner when the
// viewer is an admin (only owners remove owners), and on both owners once
// there are two.
func TestDashboardRemoveOnlyWhereAllowed(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	owner := newWebClient(t, e)
	acct := owner.signup()
	if got := owner.removable(); len(got) != 1 || got[acct.Email] {
		t.Fatalf("the only owner's page offers %v, want no Remove on themself", got)
	}
	wantPage(t, owner.get("/members"), http.StatusOK, "The only owner")

	admin := owner.addMember("Ada Admin", "admin")
	member := owner.addMember("Mia Member", "member")
	adminClient := newWebClient(t, e)
	if r := adminClient.login(admin, "initial password 1"); r.Status != http.StatusSeeOther {
		t.Fatalf("admin login = %d", r.Status)
	}
	memberClient := newWebClient(t, e)
	if r := memberClient.login(member, "initial password 1"); r.Status != http.StatusSeeOther {
		t.Fatalf("member login = %d", r.Status)
	}
	secondOwner := ""
	tests := []struct {
		name   string
		setup  func()
		viewer *webClient
		want   func() map[string]bool
	}{
		{"owner, one owner", nil, owner, func() map[string]bool {
			return map[string]bool{acct.Email: false, admin: true, member: true}
		}},
		{"admin, one owner", nil, adminClient, func() map[string]bool {
			return map[string]bool{acct.Email: false, admin: true, member: true}
		}},
		{"member", nil, memberClient, func() map[string]bool {
			return map[string]bool{acct.Email: false, admin: false, member: false}
		}},
		{"owner, two owners", func() { secondOwner = owner.addMember("Otto Owner", "owner") }, owner, func() map[string]bool {
			return map[string]bool{acct.Email: true, secondOwner: true, admin: true, member: true}
		}},
		{"admin, two owners", nil, adminClient, func() map[string]bool {
			return map[string]bool{acct.Email: false, secondOwner: false, admin: true, member: true}
		}},
	}
	// In order: each case builds on the members the previous ones added.
	for _, tt := range tests {
		if tt.setup != nil {
			tt.setup()
		}
		got, want := tt.viewer.removable(), tt.want()
		if len(got) != len(want) {
			t.Fatalf("%s: rows %v, want %v", tt.name, got, want)
		}
		for email, offered := range want {
			if got[email] != offered {
				t.Errorf("%s: Remove on %s offered = %v, want %v", tt.name, email, got[email], offered)
			}
		}
	}
}

var footerLinkRE = regexp.MustCompile(`(?s)<footer[^>]*>.*?</footer>`)

// The footer's links lead somewhere for whoever sees them: signed out
// (the log-in and sign-up pages) every link opens without a session
// instead of sending the visitor back to the log-in page; signed in, the
// first-send page is linked too.
func TestDashboardFooterLinks(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	signedOut := newWebClient(t, e)
	signedIn := newWebClient(t, e)
	signedIn.signup()
	tests := []struct {
		name   string
		client *webClient
		page   string
		want   []string
	}{
		{"log-in page", signedOut, "/login", []string{"/docs"}},
		{"sign-up page", signedOut, "/signup", []string{"/docs"}},
		{"overview", signedIn, "/", []string{"/docs", "/start"}},
	}
	for _, tt := range tests {
		r := tt.client.get(tt.page)
		wantPage(t, r, http.StatusOK)
		footer := footerLinkRE.FindString(r.Body)
		var hrefs []string
		for _, m := range regexp.MustCompile(`href="([^"]+)"`).FindAllStringSubmatch(footer, -1) {
			hrefs = append(hrefs, m[1])
		}
		if strings.Join(hrefs, " ") != strings.Join(tt.want, " ") {
			t.Fatalf("%s: footer links %v, want %v", tt.name, hrefs, tt.want)
		}
		for _, href := range hrefs {
			if got := tt.client.get(href); got.Status != http.StatusOK {
				t.Errorf("%s: footer link %s = %d (Location %q), want 200", tt.name, href, got.Status, got.Header.Get("Location"))
			}
		}
	}
}
