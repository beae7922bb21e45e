package integration

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// webhookReceiver is an httptest server that records the webhook requests
// it gets and answers 200.
type webhookReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	requests []receivedWebhook
}

// receivedWebhook is one request a webhookReceiver got.
type receivedWebhook struct {
	Header http.Header
	Body   []byte
}

func newWebhookReceiver(t *testing.T) *webhookReceiver {
	t.Helper()
	rc := &webhookReceiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.requests = append(rc.requests, receivedWebhook{Header: r.Header.Clone(), Body: b})
		rc.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// withID returns the requests whose webhook-id is id.
func (rc *webhookReceiver) withID(id string) []receivedWebhook {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []receivedWebhook
	for _, r := range rc.requests {
		if r.Header.Get("webhook-id") == id {
			out = append(out, r)
		}
	}
	return out
}

// An owner adds a webhook endpoint in the browser and copies its secret,
// which no later page shows; confirming a sender number (a real
// sender_number.status_changed event) produces a delivery that the
// workers send to the receiver, signed with that secret; the delivery log
// shows it succeeded with status 200, and "Redeliver" sends the same event
// again as a second delivery. Rotation shows a new secret once.
func TestDashboardWebhooksBrowser(t *testing.T) {
	t.Parallel()
	e := startBrowser(t, Options{Env: map[string]string{"WEBHOOK_ALLOW_PRIVATE": "true"}})
	b := e.b
	rc := newWebhookReceiver(t)
	e.signup("")

	// Add the endpoint: every event type is ticked by default.
	b.Open("/")
	if st := b.Submit(`nav a[href="/webhooks"]`); st != http.StatusOK || b.Path() != "/webhooks" {
		t.Fatalf("nav to webhooks: %d %s", st, b.Path())
	}
	b.WaitText("#no-webhooks", "No webhook endpoints yet")
	if all := b.Eval(`[...document.querySelectorAll('input[name="events"]')].every(c => c.checked)`); all != "true" {
		t.Fatal("the event types are not all ticked by default")
	}
	b.Fill("#webhook-url", rc.URL+"/hooks")
	b.Fill("#webhook-description", "Order system")
	if st := b.Submit("#add-webhook"); st != http.StatusOK {
		t.Fatalf("add endpoint: %d", st)
	}
	b.WaitText(".notice", "Endpoint added")
	secret := b.Value("#webhook-secret")
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("shown secret %q", secret)
	}
	b.Click("#copy-secret")
	b.WaitText("#webhook-secret-status", "Copied")
	b.Screenshot("20-webhook-secret")

	// The endpoint's page, loaded and reloaded, never shows the secret.
	if st := b.Submit("#webhook-done"); st != http.StatusOK {
		t.Fatalf("endpoint page: %d", st)
	}
	path := b.Path()
	if !strings.HasPrefix(path, "/webhooks/") {
		t.Fatalf("done went to %s", path)
	}
	noSecret := func(s string) {
		t.Helper()
		if b.Eval(fmt.Sprintf(`document.documentElement.outerHTML.includes(%q)`, s)) != "false" {
			t.Fatalf("%s shows the secret", b.Path())
		}
	}
	noSecret(secret)
	b.WaitText("#endpoint-events", "all")
	b.Open(path)
	noSecret(secret)
	b.Open("/webhooks")
	noSecret(secret)
	b.WaitText(".webhook .webhook-link", rc.URL+"/hooks")

	// A sender number becomes active: its status change is an event.
	const senderPhone = "+14155550141"
	e.account(senderPhone, true)
	n := e.addSender(senderPhone, "Support")
	code := e.otp(senderPhone, 1)
	b.Open("/senders")
	b.Fill("#otp-"+n, code)
	if st := b.Submit("#verify-" + n); st != http.StatusOK {
		t.Fatalf("verify: %d", st)
	}
	b.WaitVisible(`#sender-` + n + `[data-status="active"]`)

	// The workers deliver it; the log shows it succeeded with a 200.
	e.eventuallyPage(path, `#delivery-log tr[data-state="succeeded"]`, 30*time.Second)
	row := `#delivery-log tr[data-state="succeeded"]`
	if typ := b.Text(row + " th code"); typ != "sender_number.status_changed" {
		t.Fatalf("delivered event %q", typ)
	}
	if st := b.Text(row + " .status-code"); st != "200" {
		t.Fatalf("last status %q, want 200", st)
	}
	if a := b.Text(row + " .attempts"); a != "1" {
		t.Fatalf("attempts %q, want 1", a)
	}
	rowID := b.Eval(`document.querySelector('#delivery-log tr[data-state="succeeded"]').id`)
	eventID := b.Eval(`document.querySelector('#delivery-log tr[data-state="succeeded"]').dataset.eventId`)
	got := rc.withID(eventID)
	if len(got) != 1 {
		t.Fatalf("the receiver got %d requests of event %s, want 1", len(got), eventID)
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(got[0].Body, got[0].Header); err != nil {
		t.Fatalf("the request is not signed with the secret the page showed: %v", err)
	}
	if !strings.Contains(string(got[0].Body), `"type":"sender_number.status_changed"`) ||
		!strings.Contains(string(got[0].Body), `"status":"active"`) {
		t.Fatalf("body %s", got[0].Body)
	}

	// Redeliver: a second delivery of the same event, sent again.
	count := func(sel string) int {
		t.Helper()
		n, err := strconv.Atoi(b.Eval(fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	ofEvent := fmt.Sprintf(`#delivery-log tr[data-event-id=%q]`, eventID)
	if st := b.Submit("#redeliver-" + strings.TrimPrefix(rowID, "delivery-")); st != http.StatusOK {
		t.Fatalf("redeliver: %d", st)
	}
	b.WaitText(".notice", "Delivery queued again")
	if got := count(ofEvent); got != 2 {
		t.Fatalf("%d deliveries of event %s after Redeliver, want 2", got, eventID)
	}
	e.eventually(30*time.Second, "the redelivery to reach the receiver", func() bool { return len(rc.withID(eventID)) == 2 })
	e.eventually(30*time.Second, "both deliveries to show succeeded", func() bool {
		b.Open(path)
		return count(ofEvent+`[data-state="succeeded"]`) == 2
	})
	again := rc.withID(eventID)
	if string(again[1].Body) != string(again[0].Body) {
		t.Fatalf("the redelivery's body differs:\n%s\n%s", again[0].Body, again[1].Body)
	}
	b.Open(path + "?state=failed")
	b.WaitText("#no-deliveries", "No deliveries match these filters")
	b.Open(path)
	b.Screenshot("21-webhook-deliveries")

	// Rotation shows a new secret once; the endpoint page does not.
	if st := b.Submit("#rotate-secret"); st != http.StatusOK {
		t.Fatalf("rotate: %d", st)
	}
	b.WaitText(".notice", "keeps signing for 24 hours more")
	rotated := b.Value("#webhook-secret")
	if !strings.HasPrefix(rotated, "whsec_") || rotated == secret {
		t.Fatalf("rotated secret %q (was %q)", rotated, secret)
	}
	b.Open(path)
	noSecret(rotated)
}
