package webhooks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/bizmsg/platform/platform/batch"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/webhooks"
)

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// verify checks a received request with the Standard Webhooks reference
// library and secret; checkTime also holds its timestamp to the library's
// five-minute tolerance of the real clock.
func verify(secret string, r received, checkTime bool) error {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return err
	}
	if checkTime {
		return wh.Verify(r.body, r.header)
	}
	return wh.VerifyIgnoringTimestamp(r.body, r.header)
}

// An emitted event reaches its endpoint once, signed (the reference library
// verifies it), with the Standard Webhooks headers, and its delivery is
// recorded as succeeded.
func TestDeliverySigned(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var sentHeaders sync.Map // the header names as the client was given them
	svc := f.service(webhooks.Config{AllowPrivate: true, WrapTransport: func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			for name := range r.Header {
				sentHeaders.Store(name, true)
			}
			return next.RoundTrip(r)
		})
	}})
	f.work(svc, 10)
	tn := f.org()
	rc := newReceiver(t, nil)
	e := f.create(svc, tn, rc.URL+"/hooks")
	data := map[string]any{"id": 42, "status": "delivered", "note": "<&>"}
	f.emit(svc, tn, webhooks.Event{Type: webhooks.EventMessageDelivered, Key: "message:42", Data: data})

	waitFor(t, "the delivery to succeed", func() bool {
		d := f.deliveries(svc, tn, e.ID)
		return len(d) == 1 && d[0].State == webhooks.StateSucceeded
	})
	got := rc.requests()
	if len(got) != 1 {
		t.Fatalf("%d requests", len(got))
	}
	r := got[0]
	if err := verify(e.Secret, r, true); err != nil {
		t.Fatalf("the reference library refuses the request: %v", err)
	}
	if ct, ua := r.header.Get("Content-Type"), r.header.Get("User-Agent"); ct != "application/json" || ua != webhooks.UserAgent {
		t.Fatalf("Content-Type %q, User-Agent %q", ct, ua)
	}
	if !regexp.MustCompile(`^msg_[A-Z2-7]{26}$`).MatchString(r.header.Get("webhook-id")) {
		t.Fatalf("webhook-id %q", r.header.Get("webhook-id"))
	}
	if ts := r.header.Get("webhook-timestamp"); ts != strconv.FormatInt(f.clock.Now().Unix(), 10) {
		t.Fatalf("webhook-timestamp %q, want the clock's %d", ts, f.clock.Now().Unix())
	}
	var p struct {
		Type      string         `json:"type"`
		Timestamp time.Time      `json:"timestamp"`
		Data      map[string]any `json:"data"`
	}
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Type != webhooks.EventMessageDelivered || p.Data["note"] != "<&>" || p.Data["id"] != float64(42) ||
		p.Timestamp.Sub(f.clock.Now()).Abs() > time.Second {
		t.Fatalf("payload %s", r.body)
	}
	for _, name := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
		if _, ok := sentHeaders.Load(name); !ok {
			t.Fatalf("header %s not sent as the specification spells it", name)
		}
	}
	d := f.deliveries(svc, tn, e.ID)[0]
	if d.EventID != r.header.Get("webhook-id") || d.Attempts != 1 || d.LastStatusCode == nil || *d.LastStatusCode != 200 ||
		d.LastError != "" || d.LatencyMS == nil || d.NextAttemptAt != nil || d.EventType != webhooks.EventMessageDelivered {
		t.Fatalf("delivery %+v", d)
	}
}

// A 500, and no answer within the timeout, are failed attempts: the
// delivery is retried with the same webhook-id and body until a 2xx, and
// River keeps the failure's reason.
func TestDeliveryRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		first  func(w http.ResponseWriter, r *http.Request)
		reason string
	}{
		{"500", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) },
			"the endpoint answered 500"},
		{"timeout", func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
			"no answer within 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			svc := f.service(webhooks.Config{AllowPrivate: true, Timeout: time.Second, RetryBase: 50 * time.Millisecond})
			f.work(svc, 10)
			tn := f.org()
			srv := newServer(t, func(n int, w http.ResponseWriter, r *http.Request, _ []byte) {
				if n == 0 {
					tt.first(w, r)
					return
				}
				w.WriteHeader(http.StatusNoContent)
			})
			e := f.create(svc, tn, srv.URL)
			f.emit(svc, tn, webhooks.Event{Type: webhooks.EventMessageFailed, Key: "message:1", Data: map[string]int{"id": 1}})
			waitFor(t, "the delivery to succeed", func() bool {
				d := f.deliveries(svc, tn, e.ID)
				return len(d) == 1 && d[0].State == webhooks.StateSucceeded
			})
			d := f.deliveries(svc, tn, e.ID)[0]
			if d.Attempts != 2 || *d.LastStatusCode != http.StatusNoContent || d.LastError != "" {
				t.Fatalf("delivery %+v", d)
			}
			calls := srv.requests()
			if len(calls) != 2 || calls[0].header.Get("webhook-id") != calls[1].header.Get("webhook-id") ||
				string(calls[0].body) != string(calls[1].body) {
				t.Fatalf("requests %+v", calls)
			}
			var errs []string
			if err := f.db.Pool.QueryRow(context.Background(),
				`SELECT array(SELECT e->>'error' FROM jsonb_array_elements(to_jsonb(errors)) e) FROM river.river_job WHERE kind = 'webhook_delivery'`).Scan(&errs); err != nil {
				t.Fatal(err)
			}
			if len(errs) != 1 || !strings.Contains(errs[0], tt.reason) {
				t.Fatalf("job errors %q, want one with %q", errs, tt.reason)
			}
		})
	}
}

// An endpoint whose attempts all fail for 24 hours (the clock moved) is
// disabled: the delivery that fails then is failed, and the deliveries
// waiting behind it fail "endpoint disabled" without an attempt. A disabled
// endpoint gets no new deliveries; re-enabling it clears the reason and
// the failure streak.
func TestEndpointDisabledAfterSustainedFailure(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	svc := f.service(webhooks.Config{AllowPrivate: true, RetryBase: 50 * time.Millisecond, RetryMax: 100 * time.Millisecond})
	f.work(svc, 10)
	tn := f.org()
	var failing atomic.Bool
	failing.Store(true)
	rc := newReceiver(t, func(int, *http.Request, []byte) int {
		if failing.Load() {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	e := f.create(svc, tn, rc.URL)
	// Both events of one key: the second waits for the first.
	f.emit(svc, tn,
		webhooks.Event{Type: webhooks.EventMessageSent, Key: "message:1", Data: map[string]int{"id": 1}},
		webhooks.Event{Type: webhooks.EventMessageFailed, Key: "message:1", Data: map[string]int{"id": 1}})
	waitFor(t, "three failed attempts", func() bool { return f.deliveries(svc, tn, e.ID)[0].Attempts >= 3 })
	if got, _ := svc.Get(context.Background(), tn, e.ID); !got.Enabled {
		t.Fatal("disabled before 24 hours")
	}
	f.clock.Advance(25 * time.Hour)
	waitFor(t, "both deliveries to fail", func() bool {
		d := f.deliveries(svc, tn, e.ID)
		return d[0].State == webhooks.StateFailed && d[1].State == webhooks.StateFailed
	})
	d := f.deliveries(svc, tn, e.ID)
	if d[0].LastError != "the endpoint answered 503" || d[1].LastError != "endpoint disabled" || d[1].Attempts != 0 || d[0].NextAttemptAt != nil {
		t.Fatalf("deliveries %+v", d)
	}
	for _, r := range rc.requests() {
		if !strings.Contains(string(r.body), `"message.sent"`) {
			t.Fatalf("the second event was sent before the first succeeded: %s", r.body)
		}
	}
	got, err := svc.Get(context.Background(), tn, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Enabled || !strings.Contains(got.DisabledReason, "24 hours") || !strings.Contains(got.DisabledReason, "503") {
		t.Fatalf("endpoint %+v", got)
	}
	f.emit(svc, tn, webhooks.Event{Type: webhooks.EventMessageSent, Key: "message:2"})
	if n := len(f.deliveries(svc, tn, e.ID)); n != 2 {
		t.Fatalf("a disabled endpoint got a new delivery (%d)", n)
	}
	if _, err := svc.Redeliver(context.Background(), tn, e.ID, d[0].ID); errorCode(err) != webhooks.CodeEndpointDisabled {
		t.Fatalf("redeliver to a disabled endpoint: %v", err)
	}

	got, err = svc.Update(context.Background(), tn, e.ID, webhooks.EndpointPatch{Enabled: ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
	var failingSince *time.Time
	if err := f.db.Pool.QueryRow(context.Background(), `SELECT failing_since FROM `+tn.Table("webhook_endpoints")+` WHERE id = $1`, e.ID).Scan(&failingSince); err != nil {
		t.Fatal(err)
	}
	if !got.Enabled || got.DisabledReason != "" || failingSince != nil {
		t.Fatalf("re-enabled %+v, failing since %v", got, failingSince)
	}
}

// Redeliver sends a delivery's event again (same webhook-id, same body);
// RedeliverFailed sends again the events whose latest delivery failed
// since a time, once.
func TestRedelivery(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	svc := f.service(webhooks.Config{AllowPrivate: true, RetryFor: time.Hour, RetryBase: 50 * time.Millisecond, RetryMax: 100 * time.Millisecond})
	f.work(svc, 10)
	tn := f.org()
	ctx := context.Background()
	var failing atomic.Bool
	rc := newReceiver(t, func(int, *http.Request, []byte) int {
		if failing.Load() {
			return http.StatusBadGateway
		}
		return http.StatusOK
	})
	e := f.create(svc, tn, rc.URL)
	states := func() []string {
		var out []string
		for _, d := range f.deliveries(svc, tn, e.ID) {
			out = append(out, d.State)
		}
		return out
	}

	f.emit(svc, tn, webhooks.Event{Type: webhooks.EventMessageSent, Key: "message:1", Data: map[string]int{"id": 1}})
	waitFor(t, "the first delivery", func() bool { return slices.Equal(states(), []string{"succeeded"}) })
	first := f.deliveries(svc, tn, e.ID)[0]
	again, err := svc.Redeliver(ctx, tn, e.ID, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID == first.ID || again.EventID != first.EventID || again.State != webhooks.StatePending || again.Attempts != 0 {
		t.Fatalf("redelivery %+v of %+v", again, first)
	}
	waitFor(t, "the redelivery", func() bool { return len(rc.requests()) == 2 })
	got := rc.requests()
	if got[0].header.Get("webhook-id") != got[1].header.Get("webhook-id") || string(got[0].body) != string(got[1].body) {
		t.Fatalf("redelivered %s %s, first %s %s", got[1].header.Get("webhook-id"), got[1].body, got[0].header.Get("webhook-id"), got[0].body)
	}
	if _, err := svc.Redeliver(ctx, tn, e.ID, first.ID+100); !isNotFound(err) {
		t.Fatalf("redeliver an unknown delivery: %v", err)
	}

	failing.Store(true)
	since := f.clock.Now()
	f.emit(svc, tn,
		webhooks.Event{Type: webhooks.EventMessageSent, Key: "message:2", Data: map[string]int{"id": 2}},
		webhooks.Event{Type: webhooks.EventMessageSent, Key: "message:3", Data: map[string]int{"id": 3}})
	waitFor(t, "failed attempts", func() bool {
		d := f.deliveries(svc, tn, e.ID)
		return len(d) == 4 && d[2].Attempts > 0 && d[3].Attempts > 0
	})
	f.clock.Advance(2 * time.Hour) // past RetryFor, not DisableAfter
	waitFor(t, "the deliveries to fail", func() bool {
		return slices.Equal(states(), []string{"succeeded", "succeeded", "failed", "failed"})
	})
	failed := f.deliveries(svc, tn, e.ID)[2:]
	failing.Store(false)
	if n, err := svc.RedeliverFailed(ctx, tn, e.ID, f.clock.Now()); err != nil || n != 0 {
		t.Fatalf("redeliver failed since now: %d, %v", n, err)
	}
	n, err := svc.RedeliverFailed(ctx, tn, e.ID, since)
	if err != nil || n != 2 {
		t.Fatalf("redeliver failed: %d, %v", n, err)
	}
	if n, err := svc.RedeliverFailed(ctx, tn, e.ID, since); err != nil || n != 0 {
		t.Fatalf("redeliver failed again: %d, %v (an event already redelivered is not sent once more)", n, err)
	}
	waitFor(t, "the redeliveries", func() bool {
		return slices.Equal(states(), []string{"succeeded", "succeeded", "failed", "failed", "succeeded", "succeeded"})
	})
	redelivered := f.deliveries(svc, tn, e.ID)[4:]
	for i := range failed {
		if redelivered[i].EventID != failed[i].EventID {
			t.Fatalf("redelivered %+v, failed %+v", redelivered, failed)
		}
	}
}

// During a rotation's overlap every request carries two signatures, and the
// reference library verifies it with the old secret and with the new one;
// after it only the new secret signs.
func TestRotationSignsWithBothSecrets(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	svc := f.service(webhooks.Config{AllowPrivate: true})
	f.work(svc, 10)
	tn := f.org()
	rc := newReceiver(t, nil)
	e := f.create(svc, tn, rc.URL)
	rotated, err := svc.RotateSecret(context.Background(), tn, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	f.emit(svc, tn, webhooks.Event{Type: webhooks.EventSenderStatusChanged, Key: "sender_number:1", Data: map[string]int{"id": 1}})
	waitFor(t, "the first request", func() bool { return len(rc.requests()) == 1 })
	r := rc.requests()[0]
	if n := len(strings.Fields(r.header.Get("webhook-signature"))); n != 2 {
		t.Fatalf("signature %q: %d parts, want 2", r.header.Get("webhook-signature"), n)
	}
	for name, secret := range map[string]string{"old": e.Secret, "new": rotated.Secret} {
		if err := verify(secret, r, true); err != nil {
			t.Fatalf("the %s secret does not verify during the overlap: %v", name, err)
		}
	}

	f.clock.Advance(24*time.Hour + time.Second)
	f.emit(svc, tn, webhooks.Event{Type: webhooks.EventSenderStatusChanged, Key: "sender_number:1", Data: map[string]int{"id": 1}})
	waitFor(t, "the second request", func() bool { return len(rc.requests()) == 2 })
	r = rc.requests()[1]
	if n := len(strings.Fields(r.header.Get("webhook-signature"))); n != 1 {
		t.Fatalf("signature %q after the overlap: %d parts, want 1", r.header.Get("webhook-signature"), n)
	}
	if ts := r.header.Get("webhook-timestamp"); ts != strconv.FormatInt(f.clock.Now().Unix(), 10) {
		t.Fatalf("webhook-timestamp %s, want the moved clock's", ts)
	}
	if err := verify(rotated.Secret, r, false); err != nil {
		t.Fatalf("the new secret does not verify after the overlap: %v", err)
	}
	if err := verify(e.Secret, r, false); err == nil {
		t.Fatal("the old secret still verifies after the overlap")
	}
}

// An attempt never reaches a loopback address (the receiver on 127.0.0.1,
// AllowPrivate off: refused at connect time, whatever the endpoint's URL
// passed when it was created) and never follows a redirect; each is a
// failed attempt with a last_error that says so.
func TestAttemptRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		target     func(t *testing.T, elsewhere *receiver) string
		wantError  string
		wantStatus *int
	}{
		{"loopback address", func(t *testing.T, _ *receiver) string {
			return newReceiver(t, nil).URL
		}, "refused to connect to 127.0.0.1: webhooks are not sent to loopback addresses", nil},
		{"redirect", func(t *testing.T, elsewhere *receiver) string {
			redirect := http.RedirectHandler(elsewhere.URL+"/stolen", http.StatusFound)
			return newServer(t, func(_ int, w http.ResponseWriter, r *http.Request, _ []byte) {
				redirect.ServeHTTP(w, r)
			}).URL
		}, "redirects are not followed (the endpoint answered 302)", ptr(http.StatusFound)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			tn := f.org()
			// The endpoint is created by a service that allows private
			// addresses; another, which does not (the default), attempts.
			// For the redirect both allow them: the receivers are local.
			strict := tt.wantStatus == nil
			creator := f.service(webhooks.Config{AllowPrivate: true})
			svc := f.service(webhooks.Config{AllowPrivate: !strict, RetryBase: time.Hour})
			f.work(svc, 10)
			elsewhere := newReceiver(t, nil)
			e := f.create(creator, tn, tt.target(t, elsewhere))
			f.emit(svc, tn, webhooks.Event{Type: webhooks.EventMessageRead, Key: "message:1"})
			waitFor(t, "a failed attempt", func() bool { return f.deliveries(svc, tn, e.ID)[0].Attempts == 1 })
			d := f.deliveries(svc, tn, e.ID)[0]
			if d.LastError != tt.wantError || d.State != webhooks.StatePending || d.NextAttemptAt == nil {
				t.Fatalf("delivery %+v, want last_error %q", d, tt.wantError)
			}
			if (tt.wantStatus == nil) != (d.LastStatusCode == nil) || tt.wantStatus != nil && *tt.wantStatus != *d.LastStatusCode {
				t.Fatalf("last status %v, want %v", d.LastStatusCode, tt.wantStatus)
			}
			if n := len(elsewhere.requests()); n != 0 {
				t.Fatalf("the redirect target got %d requests", n)
			}
		})
	}
}

// A job of a delivery that does not exist fails its first attempt with an
// error River retries (on Citus the delivery may not be visible yet,
// docs/scaling.md) and ends on its second with nothing attempted.
func TestAttemptOfAMissingDelivery(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	svc := f.service(webhooks.Config{AllowPrivate: true})
	tn := f.org()
	e := f.create(svc, tn, newReceiver(t, nil).URL)
	first, err := svc.Attempt(context.Background(), tn, e.ID, 999_999, queue.DeliveryAttempt{Attempt: 1, MaxAttempts: 5})
	if err == nil || first.Snooze != 0 {
		t.Fatalf("first attempt: %+v, %v; want an error to retry", first, err)
	}
	second, err := svc.Attempt(context.Background(), tn, e.ID, 999_999, queue.DeliveryAttempt{Attempt: 2, MaxAttempts: 5})
	if err != nil || second != (webhooks.Result{}) {
		t.Fatalf("second attempt: %+v, %v; want nothing to do", second, err)
	}
}

// The events of one key reach an endpoint in the order they happened: the
// first event's first attempt fails, and the second is not sent before the
// first succeeded. Another key is not held back.
func TestOrderPerKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	svc := f.service(webhooks.Config{AllowPrivate: true, RetryBase: 300 * time.Millisecond})
	f.work(svc, 10)
	tn := f.org()
	var failedOnce atomic.Bool
	rc := newReceiver(t, func(_ int, _ *http.Request, body []byte) int {
		if strings.Contains(string(body), `"first"`) && failedOnce.CompareAndSwap(false, true) {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	e := f.create(svc, tn, rc.URL)
	f.emit(svc, tn, webhooks.Event{Type: webhooks.EventMessageSent, Key: "message:1", Data: "first"})
	f.emit(svc, tn,
		webhooks.Event{Type: webhooks.EventMessageDelivered, Key: "message:1", Data: "second"},
		webhooks.Event{Type: webhooks.EventMessageSent, Key: "message:2", Data: "other"})
	waitFor(t, "every delivery to succeed", func() bool {
		d := f.deliveries(svc, tn, e.ID)
		return len(d) == 3 && d[0].State == "succeeded" && d[1].State == "succeeded" && d[2].State == "succeeded"
	})
	var order []string
	for _, r := range rc.requests() {
		var p struct {
			Data string `json:"data"`
		}
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatal(err)
		}
		order = append(order, p.Data)
	}
	key1 := slices.DeleteFunc(slices.Clone(order), func(s string) bool { return s == "other" })
	if !slices.Equal(key1, []string{"first", "first", "second"}) {
		t.Fatalf("requests of message:1 in the order %v, want first (failed), first, second", order)
	}
	if slices.Index(order, "other") > slices.Index(order, "second") {
		t.Fatalf("message:2 waited for message:1: %v", order)
	}
}

// One organization's slow endpoint (its server holds every request) takes
// at most MaxInFlight of the 8 workers, and another organization's endpoint
// is delivered to meanwhile, well before the slow requests time out (30 s
// here). Without the limit the slow endpoint takes all 8 workers until then.
func TestSlowEndpointDoesNotDelayOthers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	svc := f.service(webhooks.Config{AllowPrivate: true, Timeout: 30 * time.Second})
	f.work(svc, 8)
	slowOrg, fastOrg := f.org(), f.org()
	release := make(chan struct{})
	var inFlight, most atomic.Int32
	slow := newReceiver(t, func(int, *http.Request, []byte) int {
		n := inFlight.Add(1)
		for m := most.Load(); n > m; m = most.Load() {
			if most.CompareAndSwap(m, n) {
				break
			}
		}
		<-release
		inFlight.Add(-1)
		return http.StatusOK
	})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before the receiver closes and the workers stop
	fast := newReceiver(t, nil)
	slowEndpoint := f.create(svc, slowOrg, slow.URL)
	fastEndpoint := f.create(svc, fastOrg, fast.URL)
	var events []webhooks.Event
	for i := range 12 {
		events = append(events, webhooks.Event{Type: webhooks.EventMessageSent, Key: "message:" + strconv.Itoa(i)})
	}
	f.emit(svc, slowOrg, events...)
	waitFor(t, "the slow endpoint to hold 4 requests", func() bool { return inFlight.Load() >= 4 })
	f.emit(svc, fastOrg, webhooks.Event{Type: webhooks.EventMessageSent, Key: "message:1"})
	waitWithin(t, 10*time.Second, "the other organization's delivery", func() bool {
		d := f.deliveries(svc, fastOrg, fastEndpoint.ID)
		return len(d) == 1 && d[0].State == webhooks.StateSucceeded
	})
	if n := most.Load(); n != 4 {
		t.Fatalf("the slow endpoint had %d requests in flight at once, want 4", n)
	}
	unblock()
	waitFor(t, "the slow endpoint's deliveries", func() bool {
		for _, d := range f.deliveries(svc, slowOrg, slowEndpoint.ID) {
			if d.State != webhooks.StateSucceeded {
				return false
			}
		}
		return true
	})
	if n := most.Load(); n > 4 {
		t.Fatalf("the slow endpoint had %d requests in flight at once", n)
	}
}

// The usual case of order: a message's two events emitted together (the
// built-in network's message.sent and message.delivered) are fetched by two
// workers at once. The second waits in its worker for the first's attempt
// and follows it at once; its job is not snoozed. The same for a burst of
// deliveries to one endpoint beyond its MaxInFlight places: they wait in
// their workers for a place.
func TestWaitsInTheWorker(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	svc := f.service(webhooks.Config{AllowPrivate: true})
	f.work(svc, 20)
	tn := f.org()
	rc := newReceiver(t, func(int, *http.Request, []byte) int {
		time.Sleep(100 * time.Millisecond) // each request in flight a while
		return http.StatusOK
	})
	e := f.create(svc, tn, rc.URL)
	var events []webhooks.Event
	for i := range 5 {
		key := "message:" + strconv.Itoa(i)
		events = append(events,
			webhooks.Event{Type: webhooks.EventMessageSent, Key: key, Data: key + " sent"},
			webhooks.Event{Type: webhooks.EventMessageDelivered, Key: key, Data: key + " delivered"})
	}
	start := time.Now()
	f.emit(svc, tn, events...)
	waitFor(t, "every delivery to succeed", func() bool {
		d := f.deliveries(svc, tn, e.ID)
		if len(d) != len(events) {
			return false
		}
		for _, x := range d {
			if x.State != webhooks.StateSucceeded {
				return false
			}
		}
		return true
	})
	took := time.Since(start)
	seen := map[string]bool{}
	for _, r := range rc.requests() {
		var p struct {
			Data string `json:"data"`
		}
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatal(err)
		}
		if key, ok := strings.CutSuffix(p.Data, " delivered"); ok && !seen[key+" sent"] {
			t.Fatalf("%s arrived before its message.sent", p.Data)
		}
		seen[p.Data] = true
	}
	var snoozed int
	if err := f.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM river.river_job
		WHERE kind = 'webhook_delivery' AND (metadata ? 'snoozes')`).Scan(&snoozed); err != nil {
		t.Fatal(err)
	}
	if snoozed != 0 {
		t.Fatalf("%d webhook jobs snoozed; they should have waited in their workers", snoozed)
	}
	// Ten requests of 100 ms, four at a time, each message's two in turn:
	// about 300 ms; snoozing would take seconds.
	if took > 3*time.Second {
		t.Fatalf("ten deliveries took %s", took)
	}
	t.Logf("ten deliveries, four places, in %s", took.Round(time.Millisecond))
}

// Attempts of one organization that read their deliveries, or record their
// successes, at the same time share a statement; each delivery still gets
// its own outcome. The receiver answers in waves of 10 requests, so that 10
// successes are recorded at once.
func TestConcurrentAttemptsShareStatements(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var (
		mu      sync.Mutex
		largest int
	)
	svc := f.service(webhooks.Config{AllowPrivate: true, MaxInFlight: 10, Batch: batch.Config{Sizes: batch.ObserverFunc(func(items float64) {
		mu.Lock()
		defer mu.Unlock()
		largest = max(largest, int(items))
	})}})
	f.work(svc, 20)
	tn := f.org()
	const wave, events = 10, 40
	var (
		waveMu  sync.Mutex
		arrived int
		gates   = make([]chan struct{}, events/wave)
	)
	for i := range gates {
		gates[i] = make(chan struct{})
	}
	rc := newServer(t, func(_ int, w http.ResponseWriter, r *http.Request, _ []byte) {
		waveMu.Lock()
		gate := gates[min(arrived/wave, len(gates)-1)]
		if arrived++; arrived%wave == 0 {
			close(gate)
		}
		waveMu.Unlock()
		select {
		case <-gate:
		case <-time.After(5 * time.Second): // a wave that never fills
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusOK)
	})
	e := f.create(svc, tn, rc.URL)
	f.emitUnordered(svc, tn, events)
	f.awaitSucceeded(svc, tn, e.ID, events)
	for _, d := range f.deliveries(svc, tn, e.ID) {
		if d.Attempts != 1 || d.LastStatusCode == nil || *d.LastStatusCode != http.StatusOK {
			t.Errorf("delivery %d: attempts %d, last status %v; want 1 attempt answered 200", d.ID, d.Attempts, d.LastStatusCode)
		}
	}
	if got := len(rc.requests()); got != events {
		t.Errorf("the receiver got %d requests, want %d", got, events)
	}
	mu.Lock()
	defer mu.Unlock()
	if largest < 2 {
		t.Errorf("the largest shared statement served %d attempts; concurrent attempts did not share one", largest)
	}
}

// While the API and the send path are busy (Config.Yield closed),
// attempts start at the gate's busy rate (here 20 a second, so 8 start over
// at least 350 ms; their requests reach the server up to a few
// milliseconds earlier or later than they start, so the test asks for
// 300) and every delivery still arrives; with the send path idle the same
// attempts run side by side, at once.
func TestAttemptsYieldToTheSendPath(t *testing.T) {
	t.Parallel()
	const events = 8
	cases := []struct {
		name     string
		sendPath bool
		check    func(spread time.Duration, most int32) bool
	}{
		{"send path active", true, func(spread time.Duration, _ int32) bool { return spread >= 300*time.Millisecond }},
		{"send path idle", false, func(spread time.Duration, most int32) bool { return spread < 350*time.Millisecond && most > 1 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			gate := newGate(t, 20)
			if c.sendPath {
				gate.busy()
			}
			svc := f.service(webhooks.Config{AllowPrivate: true, MaxInFlight: events, Yield: gate.Gate})
			f.work(svc, events)
			tn := f.org()
			var inFlight, most atomic.Int32
			rc := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []byte) {
				n := inFlight.Add(1)
				for m := most.Load(); n > m; m = most.Load() {
					if most.CompareAndSwap(m, n) {
						break
					}
				}
				time.Sleep(20 * time.Millisecond) // a server slow enough for attempts to overlap
				inFlight.Add(-1)
				w.WriteHeader(http.StatusOK)
			})
			e := f.create(svc, tn, rc.URL)
			f.emitUnordered(svc, tn, events)
			f.awaitSucceeded(svc, tn, e.ID, events)
			got := rc.requests()
			spread := got[len(got)-1].at.Sub(got[0].at)
			if len(got) != events || !c.check(spread, most.Load()) {
				t.Fatalf("%d requests over %v, at most %d at once (waits at the gate: %d)", len(got), spread, most.Load(), gate.Yields())
			}
		})
	}
}

// At a closed gate the attempts go in at the busy rate, in whatever order
// their jobs reach it, and still each message's message.sent arrives before
// its message.delivered (docs/api.md, §Webhook delivery: order per
// resource).
func TestOrderPerKeyAtAClosedGate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	gate := newGate(t, 20)
	gate.busy()
	svc := f.service(webhooks.Config{AllowPrivate: true, Yield: gate.Gate})
	f.work(svc, 10)
	tn := f.org()
	rc := newReceiver(t, nil)
	e := f.create(svc, tn, rc.URL)
	const messages = 4
	for i := range messages {
		key := "message:" + strconv.Itoa(i)
		f.emit(svc, tn,
			webhooks.Event{Type: webhooks.EventMessageSent, Key: key, Data: key},
			webhooks.Event{Type: webhooks.EventMessageDelivered, Key: key, Data: key})
	}
	f.awaitSucceeded(svc, tn, e.ID, 2*messages)
	seen := map[string][]string{}
	for _, r := range rc.requests() {
		var p struct {
			Type string `json:"type"`
			Data string `json:"data"`
		}
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatal(err)
		}
		seen[p.Data] = append(seen[p.Data], p.Type)
	}
	for i := range messages {
		key := "message:" + strconv.Itoa(i)
		if got := seen[key]; !slices.Equal(got, []string{webhooks.EventMessageSent, webhooks.EventMessageDelivered}) {
			t.Errorf("%s: requests %v, want sent then delivered", key, got)
		}
	}
	if gate.Yields() == 0 {
		t.Error("no attempt waited at the gate")
	}
}

// An attempt that waits at a closed gate longer than its bound (10 s)
// snoozes its job instead of attempting: the delivery stays pending, no
// attempt is counted, and it goes out once the send path eases. Here the
// gate admits one attempt (its rate's first token) and then stays closed
// until the snooze is recorded.
func TestAttemptSnoozesAtAGateClosedTooLong(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	gate := newGate(t, 0.001)
	svc := f.service(webhooks.Config{AllowPrivate: true, Yield: gate.Gate})
	tn := f.org()
	rc := newReceiver(t, nil)
	e := f.create(svc, tn, rc.URL)
	// Only the test's own expansion runs: one the commit woke could take
	// the closed gate's single pass, and then both attempts would snooze.
	svc.Close()
	f.emitUnordered(svc, tn, 2)
	gate.busy()
	start := time.Now()
	f.work(svc, 2)
	snoozed := func() int {
		var n int
		if err := f.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM river.river_job
			WHERE kind = 'webhook_delivery' AND (metadata ? 'snoozes') AND errors IS NULL`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitWithin(t, 30*time.Second, "an attempt to snooze at the closed gate", func() bool { return snoozed() == 1 })
	gate.free()
	waitWithin(t, 30*time.Second, "both deliveries to succeed", func() bool {
		ds := f.deliveries(svc, tn, e.ID)
		return len(ds) == 2 && ds[0].State == webhooks.StateSucceeded && ds[1].State == webhooks.StateSucceeded
	})
	got := rc.requests()
	if len(got) != 2 || got[1].at.Sub(start) < 10*time.Second {
		t.Fatalf("%d requests, the second %s after the gate closed; want 2, the second after the 10 s wait",
			len(got), got[len(got)-1].at.Sub(start))
	}
	for _, d := range f.deliveries(svc, tn, e.ID) {
		if d.Attempts != 1 {
			t.Errorf("delivery %d: %d attempts, want 1 (a wait at the gate is not an attempt)", d.ID, d.Attempts)
		}
	}
	if n := snoozed(); n != 1 {
		t.Fatalf("%d jobs snoozed without an error, want 1", n)
	}
}
