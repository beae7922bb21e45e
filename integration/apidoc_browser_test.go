package integration

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/apidoc"
)

// The reference page renders the served document in headless Chromium with
// the renderer the binary embeds: the send-message operation shows its
// title, every request the page makes goes to the test server (no CDN, no
// fonts, no telemetry), and the console shows no error, so nothing broke
// the page's Content-Security-Policy.
func TestReferencePageRendersOffline(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	b := NewBrowser(t, e.Server.URL)
	log := b.Record()
	if st := b.Open(apidoc.PagePath); st != http.StatusOK {
		t.Fatalf("GET %s: %d", apidoc.PagePath, st)
	}
	b.WaitText(".information-container .title", "bizmsg platform API")
	send := "#operations-tenant-tenantSendMessage"
	b.WaitVisible(send)
	if got := b.Text(send + " .opblock-summary-description"); got != "Send a message" {
		t.Errorf("the send operation's title is %q", got)
	}
	if got := b.Text(send + " .opblock-summary-path"); !strings.Contains(got, "/api/v1/messages") {
		t.Errorf("the send operation's path is %q", got)
	}
	b.Screenshot("api-reference")

	server, err := url.Parse(e.Server.URL)
	if err != nil {
		t.Fatal(err)
	}
	requests := log.Requests()
	fetched := false
	for _, r := range requests {
		u, err := url.Parse(r)
		if err != nil {
			t.Errorf("request to %q: %v", r, err)
			continue
		}
		switch {
		case u.Scheme == "data":
		case u.Host != server.Host:
			t.Errorf("the page requested %s, off the test server %s", r, server.Host)
		case u.Path == apidoc.JSONPath:
			fetched = true
		}
	}
	if !fetched {
		t.Errorf("the page never fetched %s; it requested %v", apidoc.JSONPath, requests)
	}
	for _, msg := range log.Errors() {
		t.Errorf("browser console: %s", msg)
	}
}
