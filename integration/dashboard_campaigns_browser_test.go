package integration

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bizmsg/platform/platform/network/builtin"
)

// upload chooses file for the file input sel, as a person would in the
// browser's file dialog.
func (b *Browser) upload(sel, file string) {
	b.t.Helper()
	b.step("choose "+file+" for "+sel, chromedp.SetUploadFiles(chromedp.CSS(sel), []string{file}))
}

// waitLive waits until the JavaScript expression expr is true on the
// page, which may reload itself meanwhile (a failed evaluation during a
// reload counts as not yet).
func (b *Browser) waitLive(timeout time.Duration, what, expr string) {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("browser: %s did not happen within %s (page %s, last error %v)", what, timeout, b.location(), err)
		}
		<-tick.C
	}
}

// In the browser, an owner writes a template, creates a campaign with it
// from a CSV file (a duplicate and an invalid row reported, the page's
// address the campaign's), starts it, and watches the page, reloading
// itself, until the campaign has completed: every reachable recipient
// delivered exactly one message rendered with their variables, an
// unreachable one skipped with its reason. No page breaks the
// Content-Security-Policy or throws.
func TestDashboardCampaignsBrowser(t *testing.T) {
	t.Parallel()
	e := startBrowser(t, Options{})
	b := e.b
	e.signup("")
	log := b.Record()

	// An active sender number, as the main flow makes one.
	const senderPhone = "+14155550101"
	e.account(senderPhone, true)
	n := e.addSender(senderPhone, "Campaigns")
	code := e.otp(senderPhone, 1)
	e.eventually(browserStep, "the code's sending time on /senders", func() bool {
		b.Open("/senders")
		return b.Has("#sender-"+n+" .next") && strings.Contains(b.Text("#sender-"+n+" .next"), "Enter the 6-digit code sent at")
	})
	b.Fill("#otp-"+n, code)
	if st := b.Submit("#verify-" + n); st != http.StatusOK {
		t.Fatalf("verify: %d", st)
	}
	b.WaitVisible(`#sender-` + n + `[data-status="active"]`)

	// A template, approved by the built-in network.
	b.Open("/templates/new")
	b.Fill("#t-name", "order_shipped")
	b.Fill("#t-language", "en_US")
	b.Eval(`document.querySelector("#t-category").value = "utility"`)
	b.Fill("#t-body", "Hi {{1}}, your order {{2}} has shipped.")
	b.Fill("#ex-1", "Ana")
	b.Fill("#ex-2", "A-1042")
	if st := b.Submit("#create-template"); st != http.StatusOK {
		t.Fatalf("create template: %d", st)
	}
	tplPath := strings.TrimSuffix(b.Path(), "?ok=template_created")
	poll(t, 20*time.Second, func() (bool, string) {
		b.Open(tplPath)
		status := b.Text("#template-status")
		return status == "approved", fmt.Sprintf("template status %q", status)
	})

	// Recipients: four with network accounts, one without (unreachable),
	// a duplicate and a row with a phone that is not one.
	reachable := map[string]string{"+14155550301": "Ana", "+14155550302": "Ben", "+14155550303": "Cy", "+14155550304": "Di"}
	for p := range reachable {
		if _, err := e.net.AddAccount(context.Background(), builtin.AccountSpec{Phone: p, Verified: true, PhoneVerified: true,
			ReceivingEnabled: true}); err != nil {
			t.Fatal(err)
		}
	}
	csv := "phone,1,2\n+14155550301,Ana,A-1\n+14155550302,Ben,A-2\n+14155550303,Cy,A-3\n+14155550304,Di,A-4\n" +
		"+14155550399,Eve,A-5\n+14155550301,Ana,A-1\n555-CALL-NOW,Fay,A-6\n"
	file := filepath.Join(t.TempDir(), "customers.csv")
	if err := os.WriteFile(file, []byte(csv), 0o600); err != nil {
		t.Fatal(err)
	}

	// The new-campaign form: the active number, the approved template,
	// the file.
	b.Open("/")
	if st := b.Submit(`nav a[href="/campaigns"]`); st != http.StatusOK || b.Path() != "/campaigns" {
		t.Fatalf("nav to campaigns: %d %s", st, b.Path())
	}
	b.WaitText("#no-campaigns", "No campaigns yet")
	if st := b.Submit("#new-campaign"); st != http.StatusOK || b.Path() != "/campaigns/new" {
		t.Fatalf("new campaign: %d %s", st, b.Path())
	}
	b.Fill("#c-name", "Shipping notices")
	b.Click("#c-sender-" + n)
	if b.Eval(`document.querySelector("#c-kind-template").checked`) != "true" {
		t.Fatal("the template is not the default content while one is approved")
	}
	b.Eval(`document.querySelector("#c-template").selectedIndex = 1`)
	b.upload("#c-file", file)
	b.Screenshot("40-campaign-new")
	if st := b.Submit("#create-campaign"); st != http.StatusOK {
		t.Fatalf("create campaign: %d", st)
	}
	b.WaitText(".notice", "5 recipients added; 1 duplicate and 1 invalid row were not.")
	path := b.Path()
	if !regexp.MustCompile(`^/campaigns/\d+$`).MatchString(path) {
		t.Fatalf("the answer to the form shows the address %s, want the campaign's", path)
	}
	if got := b.Text(`#invalid-rows tr[data-row="7"]`); !strings.Contains(got, "555-CALL-NOW") || !strings.Contains(got, "phone") {
		t.Fatalf("the invalid row reads %q", got)
	}
	b.Screenshot("41-campaign-uploaded")

	// Start, and watch the page reload itself until the campaign is
	// done and its messages delivered.
	if st := b.Submit("#start-campaign"); st != http.StatusOK || b.Path() != path+"?ok=campaign_started" {
		t.Fatalf("start: %d %s", st, b.Path())
	}
	live := b.Has(`meta[http-equiv="refresh"]`)
	b.Eval(`window.notReloaded = true`)
	b.waitLive(90*time.Second, "the campaign's completion, with nothing queued",
		`document.querySelector("#campaign-status")?.textContent === "completed" && !document.querySelector('meta[http-equiv="refresh"]')`)
	// (Unless the release outran the redirect after the start, the page
	// was live and reloaded itself to show the completion.)
	if live && b.Eval(`window.notReloaded === true`) == "true" {
		t.Fatal("the page showed the completion without reloading itself")
	}
	count := func(status string) string {
		return b.Text(`#campaign-counts li[data-status="` + status + `"] .count`)
	}
	if d, r, s := count("delivered"), count("read"), count("skipped"); d != "4" || r != "0" || s != "1" || count("pending") != "0" ||
		count("failed") != "0" || b.Text("#count-total") != "5" {
		t.Fatalf("counts delivered %s, read %s, skipped %s; page %s", d, r, s, b.Text("#campaign-counts"))
	}
	if got := b.Text(`#skip-reasons li[data-reason="unreachable"]`); !strings.HasSuffix(got, ": 1") {
		t.Fatalf("skip reason %q", got)
	}
	if got := b.Text("#campaign-summary"); !strings.HasPrefix(got, "5 of 5 recipients done (100%)") {
		t.Fatalf("summary %q", got)
	}
	b.Screenshot("42-campaign-completed")

	// Every reachable recipient got exactly one message, with their
	// variables.
	for p, name := range reachable {
		inbox, err := e.net.Inbox(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if len(inbox) != 1 || inbox[0].FromPhone != senderPhone || !strings.HasPrefix(inbox[0].Content, "Hi "+name+", your order") {
			t.Fatalf("inbox of %s: %+v", p, inbox)
		}
	}

	// The recipients' filter, the list, and the campaign's messages.
	b.Eval(`document.querySelector("#f-status").value = "skipped"`)
	if st := b.Submit("#apply-filters"); st != http.StatusOK {
		t.Fatalf("filter: %d", st)
	}
	if got := b.Eval(`[...document.querySelectorAll("#recipients tbody tr")].map(r => r.dataset.phone).join(" ")`); got != "+14155550399" {
		t.Fatalf("skipped recipients %q", got)
	}
	if st := b.Submit("#campaign-messages"); st != http.StatusOK || !strings.HasPrefix(b.Path(), "/messages?campaign_id=") {
		t.Fatalf("the campaign's messages: %d %s", st, b.Path())
	}
	if got := b.Eval(`document.querySelectorAll("#messages tbody tr").length`); got != "4" {
		t.Fatalf("%s messages of the campaign in the history, want 4", got)
	}
	b.Open("/campaigns")
	if got := b.Text(`tr[data-status="completed"] .progress-text`); got != "5 of 5 recipients done (100%)" {
		t.Fatalf("the list's progress %q", got)
	}
	b.Screenshot("43-campaigns")

	// At phone width the campaign's page has nothing off screen.
	b.Viewport(390, 844)
	b.Open(path)
	b.WaitVisible("#campaign-bar")
	if wide := b.Eval(`document.documentElement.scrollWidth > window.innerWidth`); wide != "false" {
		t.Fatal("the campaign's page scrolls sideways at 390 px")
	}
	b.Screenshot("44-campaign-phone")

	for _, msg := range log.Errors() {
		t.Errorf("browser console: %s", msg)
	}
}
