package integration

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"testing"
)

// sentenceRE is a message written as a sentence: a capital first letter
// and a full stop at the end.
var sentenceRE = regexp.MustCompile(`^\p{Lu}.*\.$`)

// Dashboard defects fixed before, shown again in headless Chromium, in one
// browser session (one tab, so the steps run in order):
//
//   - the footer of the sign-in page leads to the API reference (/docs),
//     which opens without a session, not back to the sign-in page;
//   - the members page does not offer the only owner to remove themself
//     (the API would refuse with last_owner), and does offer to remove
//     another member;
//   - the dashboard's 404 pages say what was not found in a sentence, as
//     every other message is written.
//
// A number waiting for its code showing no daily allowance is
// TestDashboardBrowserPhoneOverview's.
func TestDashboardDefectsBrowser(t *testing.T) {
	t.Parallel()
	e := startBrowser(t, Options{})
	b := e.b

	// Signed out, the footer's only link is the API reference; following
	// it opens the reference page.
	if st := b.Open("/login"); st != http.StatusOK {
		t.Fatalf("GET /login: %d", st)
	}
	if links := b.Eval(`[...document.querySelectorAll("footer a")].map(a => a.textContent.trim()).join(" | ")`); links != "API reference" {
		t.Fatalf("the sign-in page's footer links are %q, want the API reference only", links)
	}
	if st := b.Submit("footer a"); st != http.StatusOK || b.Path() != "/docs" {
		t.Fatalf("the sign-in page's API reference link led to %s (%d), want /docs", b.Path(), st)
	}
	b.WaitText(".information-container .title", "bizmsg platform API")
	b.WaitVisible("#operations-tenant-tenantSendMessage")
	if got := b.Text("#operations-tenant-tenantSendMessage .opblock-summary-description"); got != "Send a message" {
		t.Fatalf("the API reference's send operation is titled %q", got)
	}

	// The only owner: no Remove on their own row, with the reason, and
	// Remove on a member they added.
	owner, _ := e.signup("")
	b.Open("/members")
	b.Fill("#m-name", "Mia Member")
	member := uniqueEmail("mia")
	b.Fill("#m-email", member)
	b.Fill("#m-password", "initial password 1")
	if st := b.Submit("#add-member"); st != http.StatusOK || b.Path() != "/members?ok=member_added" {
		t.Fatalf("add member: %d %s", st, b.Path())
	}
	b.WaitText(".notice", "Member added")
	// row describes the row of email: its id, its Remove link's target
	// (if it shows one) and the text of its actions cell.
	row := func(email string) string {
		t.Helper()
		return b.Eval(fmt.Sprintf(`(() => {
			const tr = [...document.querySelectorAll("tr[id^=member-]")].find(tr => tr.textContent.includes(%q));
			if (!tr) return "no row";
			const a = [...tr.querySelectorAll("a")].find(a => a.textContent.startsWith("Remove") && a.checkVisibility());
			return tr.id + " remove=" + (a ? a.getAttribute("href") : "none") + " actions=" + tr.querySelector(".row-actions").textContent.trim();
		})()`, email))
	}
	ownerID := b.Eval(fmt.Sprintf(`[...document.querySelectorAll("tr[id^=member-]")].find(tr => tr.textContent.includes(%q))?.id.slice(7)`, owner))
	if got, want := row(owner), "member-"+ownerID+" remove=none actions=The only owner"; got != want {
		t.Errorf("the only owner's own row: %q, want %q", got, want)
	}
	memberID := b.Eval(fmt.Sprintf(`[...document.querySelectorAll("tr[id^=member-]")].find(tr => tr.textContent.includes(%q))?.id.slice(7)`, member))
	if got, want := row(member), "member-"+memberID+" remove=/members/"+memberID+"/remove actions=Remove Mia Member"; got != want {
		t.Errorf("the member's row, seen by the owner: %q, want %q", got, want)
	}

	// 404 pages, signed in: the message is a sentence, word for word what
	// apperr.NotFound makes of what was not found.
	notFound := []struct {
		path, want string
	}{
		{"/messages/999999", "Message not found."},
		{"/messages/not-an-id", "Message not found."},
		{"/conversations/999999", "Conversation not found."},
		{"/members/999999/remove", "Member not found."},
		{"/webhooks/999999", "Webhook endpoint not found."},
		{"/keys/not-an-id/revoke", "API key not found."},
	}
	for _, tt := range notFound {
		if st := b.Open(tt.path); st != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", tt.path, st)
			continue
		}
		if h := b.Text("main h1"); h != "Not found" {
			t.Errorf("GET %s: heading %q, want Not found", tt.path, h)
		}
		msg := b.Text("#error-message")
		if !sentenceRE.MatchString(msg) {
			t.Errorf("GET %s: message %q is not a sentence (capital letter, full stop)", tt.path, msg)
		}
		if msg != tt.want {
			t.Errorf("GET %s: message %q, want %q", tt.path, msg, tt.want)
		}
	}

	// The messages table at 1280 px keeps its content column readable: a
	// sentence wraps to a few lines, not one word a line.
	var schema string
	if err := e.App.DB.Pool.QueryRow(t.Context(), `SELECT schema_name FROM central.organizations ORDER BY id DESC LIMIT 1`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	if _, err := e.App.DB.Pool.Exec(t.Context(), fmt.Sprintf(`WITH s AS (
		  INSERT INTO %[1]s.sender_numbers (phone, status, verification_status) VALUES ('+14155550100', 'active', 'verified') RETURNING id)
		INSERT INTO %[1]s.messages (sender_number_id, to_phone, type, content, status, client_reference)
		SELECT id, '+14155550199', 'text', 'Your order 4711 has shipped and will arrive on Tuesday between nine and noon.', 'queued',
		       'order-4711-shipping-notice' FROM s`, schema)); err != nil {
		t.Fatal(err)
	}
	b.Viewport(1280, 800)
	b.Open("/messages")
	raw := b.Eval(`String(Math.round(document.querySelector("td.content").getBoundingClientRect().width))`)
	if w, err := strconv.Atoi(raw); err != nil || w < 192 {
		t.Fatalf("the content column is %s px wide at 1280 px, want at least 192 (12rem)", raw)
	}
}
