package integration

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// In the browser, an owner writes a template while the preview shows the
// rendered text and the example fields follow the variables typed,
// submits it, and sees the built-in network approve it; then keeps the
// opt-out list: adds a phone, sets the answer to STOP, and removes the
// phone after confirming. No page breaks the Content-Security-Policy or
// throws.
func TestDashboardTemplatesOptOutsBrowser(t *testing.T) {
	t.Parallel()
	e := startBrowser(t, Options{})
	b := e.b
	e.signup("")
	log := b.Record()

	// The editor: example fields appear, reorder and go as variables are
	// typed, and the preview renders what the platform will send.
	b.Open("/")
	if st := b.Submit(`nav a[href="/templates"]`); st != http.StatusOK || b.Path() != "/templates" {
		t.Fatalf("nav to templates: %d %s", st, b.Path())
	}
	b.WaitText("#no-templates", "No templates yet")
	if st := b.Submit("#new-template"); st != http.StatusOK || b.Path() != "/templates/new" {
		t.Fatalf("new template: %d %s", st, b.Path())
	}
	b.WaitVisible("#preview")
	b.WaitText("#preview-text", "Type a body")
	b.Fill("#t-name", "order_shipped")
	b.Fill("#t-language", "en_US")
	b.Eval(`document.querySelector("#t-category").value = "utility"`)
	b.Fill("#t-body", "Hi {{2}}, your order {{1}} has shipped. {{3}}")
	examples := func() string {
		return b.Eval(`[...document.querySelectorAll("#t-examples input")].map(i => i.name).join(" ")`)
	}
	if got := examples(); got != "examples.1 examples.2 examples.3" {
		t.Fatalf("example fields %q, want one per variable in order", got)
	}
	b.Fill("#ex-3", "typed for 3")
	b.Fill("#t-body", "Hi {{2}}, your order {{1}} has shipped. Track it in the app.")
	if got := examples(); got != "examples.1 examples.2" {
		t.Fatalf("example fields %q after {{3}} went", got)
	}
	if got := b.Eval(`document.querySelectorAll("#preview-text mark").length`); got != "2" {
		t.Fatalf("%s variables marked in the preview, want the 2 without examples", got)
	}
	b.Fill("#t-header", "Order {{1}}")
	b.Fill("#t-footer", "Acme Deliveries")
	b.Fill("#ex-1", "A-1042")
	b.Fill("#ex-2", "Ana")
	want := "Order A-1042\n\nHi Ana, your order A-1042 has shipped. Track it in the app.\n\nAcme Deliveries"
	if got := b.Eval(`document.querySelector("#preview-text").textContent`); got != want {
		t.Fatalf("preview %q, want %q", got, want)
	}
	if b.Has("#preview-text mark") || b.Eval(`document.querySelector("#no-examples").hidden`) != "true" {
		t.Fatal("the preview still marks a variable, or says there are none")
	}
	b.Screenshot("30-template-new")

	// "Check and preview": the service's rendering agrees, and the script
	// keeps the server's example fields with their values.
	if st := b.Submit("#check-template"); st != http.StatusOK || b.Path() != "/templates" {
		t.Fatalf("check template: %d %s", st, b.Path())
	}
	b.WaitText(".notice", "passes every check")
	if got := b.Eval(`document.querySelector("#preview-text").textContent`); got != want {
		t.Fatalf("preview after the check %q, want %q", got, want)
	}
	if got := examples(); got != "examples.1 examples.2" || b.Value("#ex-2") != "Ana" {
		t.Fatalf("example fields after the check: %q", got)
	}

	// Submitted, then approved by the built-in network within seconds.
	if st := b.Submit("#create-template"); st != http.StatusOK {
		t.Fatalf("create template: %d", st)
	}
	path := b.Path()
	if !regexp.MustCompile(`^/templates/\d+\?ok=template_created$`).MatchString(path) {
		t.Fatalf("created template went to %s", path)
	}
	b.WaitText(".notice", "Template submitted")
	path = strings.TrimSuffix(path, "?ok=template_created")
	poll(t, 20*time.Second, func() (bool, string) {
		b.Open(path)
		status := b.Text("#template-status")
		return status == "approved", fmt.Sprintf("template status %q", status)
	})
	if got := b.Eval(`document.querySelector("#template-sample").textContent`); got != want {
		t.Fatalf("the approved template renders %q, want the preview's %q", got, want)
	}
	b.Screenshot("31-template-approved")
	if st := b.Submit(`a[href="/templates"]`); st != http.StatusOK {
		t.Fatalf("back to the list: %d", st)
	}
	if got := b.Text(`tr[data-status="approved"] .template-link`); got != "order_shipped" {
		t.Fatalf("approved template in the list: %q", got)
	}

	// Opt-outs: add a phone, answer STOP with the organization's text,
	// remove the phone after confirming.
	const phone = "+14155550123"
	if st := b.Submit(`nav a[href="/opt-outs"]`); st != http.StatusOK || b.Path() != "/opt-outs" {
		t.Fatalf("nav to opt-outs: %d %s", st, b.Path())
	}
	b.WaitText("#no-opt-outs", "No one has opted out")
	if got := b.Value("#opt-out-reply"); !strings.Contains(got, "You have been unsubscribed") {
		t.Fatalf("the answer to STOP shows %q, want the English default", got)
	}
	b.Fill("#o-phone", phone)
	b.Fill("#o-note", "Asked on the phone")
	if st := b.Submit("#add-opt-out"); st != http.StatusOK || b.Path() != "/opt-outs?ok=opt_out_added" {
		t.Fatalf("add opt-out: %d %s", st, b.Path())
	}
	row := `tr[data-phone="` + phone + `"]`
	b.WaitText(row, "Asked on the phone")
	if got := b.Text(row + " .badge"); got != "dashboard" {
		t.Fatalf("the entry's source is %q", got)
	}
	b.Fill("#opt-out-reply", "You will hear no more from Acme.")
	if st := b.Submit("#save-replies"); st != http.StatusOK {
		t.Fatalf("save replies: %d", st)
	}
	b.WaitText(".notice", "Confirmation texts saved")
	if got := b.Value("#opt-out-reply"); got != "You will hear no more from Acme." {
		t.Fatalf("the answer to STOP after saving: %q", got)
	}
	b.Screenshot("32-opt-outs")
	if st := b.Submit(row + " a.danger"); st != http.StatusOK || !strings.HasPrefix(b.Path(), "/opt-outs/remove?") {
		t.Fatalf("remove: %d %s", st, b.Path())
	}
	b.WaitText("main", "Take "+phone+" off the opt-out list?")
	if st := b.Submit("#confirm-remove"); st != http.StatusOK || b.Path() != "/opt-outs?ok=opt_out_removed" {
		t.Fatalf("confirm remove: %d %s", st, b.Path())
	}
	b.WaitText("#no-opt-outs", "No one has opted out")

	// At phone width the editor is one column, with nothing off screen.
	b.Viewport(390, 844)
	b.Open("/templates/new")
	b.WaitVisible("#preview")
	if wide := b.Eval(`document.documentElement.scrollWidth > window.innerWidth`); wide != "false" {
		t.Fatal("the template editor scrolls sideways at 390 px")
	}
	b.Screenshot("33-template-new-phone")

	for _, msg := range log.Errors() {
		t.Errorf("browser console: %s", msg)
	}
}
