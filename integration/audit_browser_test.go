package integration

import (
	"net/http"
	"strings"
	"testing"
)

// An owner creates a key in the browser, follows the navigation to the
// audit log and reads the key's creation there, with their name and the
// key's; the page's filters narrow the list.
func TestDashboardBrowserAuditLog(t *testing.T) {
	t.Parallel()
	e := startBrowser(t, Options{})
	b := e.b
	e.signup("")

	b.Open("/keys")
	b.Fill("#key-name", "Order notifications")
	b.Click(`input[name="scopes"][value="messages.send"]`)
	if st := b.Submit("#create-key"); st != http.StatusOK {
		t.Fatalf("create key: %d", st)
	}
	if key := b.Value("#plain-key"); !strings.HasPrefix(key, "bmk_") {
		t.Fatalf("shown key %q", key)
	}

	if st := b.Submit("#nav-audit"); st != http.StatusOK || b.Path() != "/audit" {
		t.Fatalf("audit log: %d %s", st, b.Path())
	}
	row := `#audit tr[data-action="api_key.create"]`
	b.WaitVisible(row)
	text := b.Text(row)
	for _, want := range []string{"Ada Owner", "api_key.create", "API key ", "name: Order notifications", "scopes: messages.send"} {
		if !strings.Contains(text, want) {
			t.Fatalf("the key's entry %q lacks %q", text, want)
		}
	}
	if n := b.Eval(`document.querySelectorAll("#audit tbody tr").length`); n != "1" {
		t.Fatalf("%s entries, want the key's creation only", n)
	}
	b.Screenshot("14-audit-log")

	// Filters, set in the form: members' changes (none), then keys'.
	b.Eval(`document.getElementById("f-action").value = "member"`)
	b.Submit("#apply-filters")
	b.WaitText("#no-entries", "Nothing matches these filters")
	b.Eval(`document.getElementById("f-action").value = "api_key.create"`)
	b.Submit("#apply-filters")
	b.WaitVisible(row)
	b.Fill("#f-target", "api_key:x")
	if st := b.Submit("#apply-filters"); st != http.StatusUnprocessableEntity {
		t.Fatalf("a bad target: %d, want 422", st)
	}
	b.WaitText("#target-err", "must be api_key:<id>")
}
