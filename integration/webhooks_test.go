package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/webhooks"
)

// webhookEndpoint is an endpoint resource as the API renders it.
type webhookEndpoint struct {
	ID             int64    `json:"id"`
	URL            string   `json:"url"`
	Description    string   `json:"description"`
	Events         []string `json:"events"`
	Enabled        bool     `json:"enabled"`
	DisabledReason *string  `json:"disabled_reason"`
	Secret         string   `json:"secret"`
}

// webhookDelivery is a delivery resource as the API renders it.
type webhookDelivery struct {
	ID             int64   `json:"id"`
	EventID        string  `json:"event_id"`
	EventType      string  `json:"event_type"`
	State          string  `json:"state"`
	Attempts       int     `json:"attempts"`
	LastStatusCode *int    `json:"last_status_code"`
	LastError      *string `json:"last_error"`
}

// createWebhook adds an endpoint through the API and returns it with its
// secret.
func createWebhook(t *testing.T, e *Env, key map[string]string, body map[string]any) webhookEndpoint {
	t.Helper()
	r := e.Do(Request{Method: http.MethodPost, Path: "/api/v1/webhooks", Header: key, Body: body})
	if r.Status != http.StatusCreated {
		t.Fatalf("create webhook = %d %s", r.Status, r.Body)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("Cache-Control %q on a response with a secret", cc)
	}
	var out struct {
		Data webhookEndpoint `json:"data"`
	}
	r.JSON(t, &out)
	return out.Data
}

// docs/api.md, §Webhooks: the endpoint routes over HTTP, with the scope,
// the 422s, the 404s across organizations, and the secret shown only on
// creation and rotation. Every answer is checked against docs/openapi.yaml.
func TestWebhookEndpointsAPI(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	org, other := e.Register(t), e.Register(t)
	key := org.Key()

	created := createWebhook(t, e, key, map[string]any{"url": "https://hooks.example.com/in", "description": "orders"})
	if !strings.HasPrefix(created.Secret, "whsec_") || !created.Enabled || len(created.Events) != len(webhooks.EventTypes()) ||
		created.DisabledReason != nil {
		t.Fatalf("created %+v", created)
	}
	second := createWebhook(t, e, key, map[string]any{"url": "http://hooks.example.com/b", "events": []string{"message.read"}})
	path := fmt.Sprintf("/api/v1/webhooks/%d", created.ID)

	for _, p := range []string{path, "/api/v1/webhooks", "/api/v1/webhooks?limit=1"} {
		r := e.Do(Request{Method: http.MethodGet, Path: p, Header: key})
		if r.Status != http.StatusOK || strings.Contains(string(r.Body), "secret") || strings.Contains(string(r.Body), "whsec_") {
			t.Fatalf("GET %s = %d %s, want 200 without a secret", p, r.Status, r.Body)
		}
	}
	r := e.Do(Request{Method: http.MethodGet, Path: "/api/v1/webhooks?limit=1", Header: key})
	var page struct {
		Data       []webhookEndpoint `json:"data"`
		NextCursor *string           `json:"next_cursor"`
	}
	r.JSON(t, &page)
	if len(page.Data) != 1 || page.Data[0].ID != second.ID || page.NextCursor == nil {
		t.Fatalf("first page %s", r.Body)
	}
	r = e.Do(Request{Method: http.MethodGet, Path: "/api/v1/webhooks?limit=1&cursor=" + *page.NextCursor, Header: key})
	r.JSON(t, &page)
	if len(page.Data) != 1 || page.Data[0].ID != created.ID || page.NextCursor != nil {
		t.Fatalf("second page %s", r.Body)
	}

	r = e.Do(Request{Method: http.MethodPatch, Path: path, Header: key, Body: map[string]any{"enabled": false, "events": []string{"message.failed", "message.sent"}}})
	var one struct {
		Data webhookEndpoint `json:"data"`
	}
	r.JSON(t, &one)
	if r.Status != http.StatusOK || one.Data.Enabled || one.Data.DisabledReason == nil ||
		strings.Join(one.Data.Events, ",") != "message.sent,message.failed" || one.Data.Secret != "" {
		t.Fatalf("PATCH = %d %s", r.Status, r.Body)
	}
	r = e.Do(Request{Method: http.MethodPost, Path: path + "/rotate-secret", Header: key})
	r.JSON(t, &one)
	if r.Status != http.StatusOK || !strings.HasPrefix(one.Data.Secret, "whsec_") || one.Data.Secret == created.Secret ||
		r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("rotate = %d %s", r.Status, r.Body)
	}

	t.Run("422", func(t *testing.T) {
		for _, tc := range []struct {
			method, path string
			body         any
			field        string
		}{
			{http.MethodPost, "/api/v1/webhooks", map[string]any{"url": "ftp://example.com/"}, "url"},
			{http.MethodPost, "/api/v1/webhooks", map[string]any{"url": "example.com/hook"}, "url"},
			{http.MethodPost, "/api/v1/webhooks", map[string]any{}, "url"},
			{http.MethodPost, "/api/v1/webhooks", map[string]any{"url": "http://127.0.0.1:9000/"}, "url"},
			{http.MethodPost, "/api/v1/webhooks", map[string]any{"url": "http://[fd00:ec2::254]/"}, "url"},
			{http.MethodPost, "/api/v1/webhooks", map[string]any{"url": "http://localhost/"}, "url"},
			{http.MethodPost, "/api/v1/webhooks", map[string]any{"url": "https://example.com/", "events": []string{"message.lost"}}, "events"},
			{http.MethodPost, "/api/v1/webhooks", map[string]any{"url": "https://example.com/", "events": "message.sent"}, "events"},
			{http.MethodPatch, path, map[string]any{"url": "https://10.0.0.1/"}, "url"},
			{http.MethodPatch, path, map[string]any{"enabled": "yes"}, "enabled"},
			{http.MethodGet, path + "/deliveries?state=lost", nil, "state"},
			{http.MethodGet, path + "/deliveries?event_type=message.lost", nil, "event_type"},
			{http.MethodGet, path + "/deliveries?limit=0", nil, "limit"},
			{http.MethodGet, "/api/v1/webhooks?cursor=nope", nil, "cursor"},
			{http.MethodPost, path + "/deliveries/redeliver", map[string]any{"since": "yesterday"}, "since"},
			{http.MethodPost, path + "/deliveries/redeliver", map[string]any{}, "since"},
		} {
			r := e.Do(Request{Method: tc.method, Path: tc.path, Header: key, Body: tc.body})
			m := r.Map(t)
			fields, _ := m["errors"].(map[string]any)
			if r.Status != http.StatusUnprocessableEntity || m["code"] != "validation_failed" || fields[tc.field] == nil {
				t.Errorf("%s %s %v = %d %s, want 422 naming %s", tc.method, tc.path, tc.body, r.Status, r.Body, tc.field)
			}
		}
	})

	t.Run("another organization's", func(t *testing.T) {
		for _, tc := range []struct {
			method, path string
			body         any
		}{
			{http.MethodGet, path, nil},
			{http.MethodPatch, path, map[string]any{"enabled": true}},
			{http.MethodPost, path + "/rotate-secret", nil},
			{http.MethodGet, path + "/deliveries", nil},
			{http.MethodPost, path + "/deliveries/1/redeliver", nil},
			{http.MethodPost, path + "/deliveries/redeliver", map[string]any{"since": "2026-01-01T00:00:00Z"}},
			{http.MethodDelete, path, nil},
			{http.MethodGet, "/api/v1/webhooks/0", nil},
			{http.MethodGet, "/api/v1/webhooks/abc", nil},
			{http.MethodPost, path + "/deliveries/x/redeliver", nil},
		} {
			r := e.Do(Request{Method: tc.method, Path: tc.path, Header: other.Key(), Body: tc.body})
			if r.Status != http.StatusNotFound || r.Map(t)["code"] != "not_found" {
				t.Errorf("%s %s by another organization = %d %s, want 404", tc.method, tc.path, r.Status, r.Body)
			}
		}
		r := e.Do(Request{Method: http.MethodGet, Path: "/api/v1/webhooks", Header: other.Key()})
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"data":[]`) {
			t.Errorf("another organization's list = %d %s", r.Status, r.Body)
		}
	})

	t.Run("scope", func(t *testing.T) {
		sendOnly := KeyHeader(e.APIKey(t, org, "messages.send", "messages.read", "contacts.lookup", "usage.read"))
		manage := KeyHeader(e.APIKey(t, org, "webhooks.manage"))
		for _, tc := range []struct {
			method, path string
			body         any
		}{
			{http.MethodPost, "/api/v1/webhooks", map[string]any{"url": "https://example.com/"}},
			{http.MethodGet, "/api/v1/webhooks", nil},
			{http.MethodGet, path, nil},
			{http.MethodPatch, path, map[string]any{}},
			{http.MethodPost, path + "/rotate-secret", nil},
			{http.MethodGet, path + "/deliveries", nil},
			{http.MethodPost, path + "/deliveries/1/redeliver", nil},
			{http.MethodPost, path + "/deliveries/redeliver", map[string]any{"since": "2026-01-01T00:00:00Z"}},
			{http.MethodDelete, path + "0", nil},
		} {
			r := e.Do(Request{Method: tc.method, Path: tc.path, Header: sendOnly, Body: tc.body})
			m := r.Map(t)
			if r.Status != http.StatusForbidden || m["code"] != "insufficient_scope" || !strings.Contains(m["message"].(string), "webhooks.manage") {
				t.Errorf("%s %s without webhooks.manage = %d %s", tc.method, tc.path, r.Status, r.Body)
			}
			r = e.Do(Request{Method: tc.method, Path: tc.path, Header: manage, Body: tc.body})
			if r.Status == http.StatusForbidden || r.Status == http.StatusUnauthorized {
				t.Errorf("%s %s with webhooks.manage = %d %s", tc.method, tc.path, r.Status, r.Body)
			}
		}
	})

	r = e.Do(Request{Method: http.MethodDelete, Path: path, Header: key})
	if r.Status != http.StatusNoContent || len(r.Body) != 0 {
		t.Fatalf("DELETE = %d %s", r.Status, r.Body)
	}
	if r = e.Do(Request{Method: http.MethodGet, Path: path, Header: key}); r.Status != http.StatusNotFound {
		t.Fatalf("GET after DELETE = %d %s", r.Status, r.Body)
	}
}

// docs/api.md, §Webhooks, end to end: an event emitted in a transaction is
// delivered by the service's own worker, signed (the reference library
// verifies it); its delivery shows in the log; redelivery sends it again
// with the same webhook-id; failed deliveries are redelivered since a time;
// a disabled endpoint refuses redelivery.
func TestWebhookDeliveryAPI(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{
		Workers:  true,
		Env:      map[string]string{"WEBHOOK_ALLOW_PRIVATE": "true"},
		Webhooks: webhooks.Config{RetryFor: time.Hour, RetryBase: 50 * time.Millisecond, RetryMax: 100 * time.Millisecond},
	})
	org := e.Register(t)
	key := org.Key()
	var (
		failing atomic.Bool
		mu      sync.Mutex
		got     []*http.Request
		bodies  [][]byte
	)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r.Clone(context.Background())), append(bodies, b)
		mu.Unlock()
		if failing.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	requests := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}
	wh := createWebhook(t, e, key, map[string]any{"url": rc.URL + "/hooks", "events": []string{"message.delivered", "message.failed"}})
	path := fmt.Sprintf("/api/v1/webhooks/%d", wh.ID)
	emit := func(events ...webhooks.Event) {
		t.Helper()
		ctx := context.Background()
		if err := db.BeginFunc(ctx, e.App.DB.Pool, func(tx pgx.Tx) error {
			return e.App.Webhooks.Emit(ctx, tx, org.Tenant, events...)
		}); err != nil {
			t.Fatal(err)
		}
	}
	log := func(query string) []webhookDelivery {
		t.Helper()
		r := e.Do(Request{Method: http.MethodGet, Path: path + "/deliveries" + query, Header: key})
		if r.Status != http.StatusOK {
			t.Fatalf("deliveries = %d %s", r.Status, r.Body)
		}
		var out struct {
			Data []webhookDelivery `json:"data"`
		}
		r.JSON(t, &out)
		return out.Data
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		poll(t, 20*time.Second, func() (bool, string) { return cond(), "waiting for " + what })
	}

	emit(webhooks.Event{Type: webhooks.EventMessageDelivered, Key: "message:1", Data: map[string]any{"id": 1, "status": "delivered"}},
		webhooks.Event{Type: webhooks.EventMessageSent, Key: "message:1", Data: map[string]any{"id": 1}})
	wait("the delivery", func() bool { d := log(""); return len(d) == 1 && d[0].State == "succeeded" })
	mu.Lock()
	first := got[0]
	wk, err := standardwebhooks.NewWebhook(wh.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wk.Verify(bodies[0], first.Header); err != nil {
		t.Fatalf("the reference library refuses the request: %v", err)
	}
	if !strings.HasPrefix(string(bodies[0]), `{"type":"message.delivered","timestamp":"`) || first.URL.Path != "/hooks" {
		t.Fatalf("request %s %s", first.URL, bodies[0])
	}
	mu.Unlock()
	d := log("?state=succeeded&event_type=message.delivered")[0]
	if d.EventID != first.Header.Get("webhook-id") || d.Attempts != 1 || *d.LastStatusCode != http.StatusNoContent || d.LastError != nil {
		t.Fatalf("delivery %+v", d)
	}
	if n := len(log("?state=failed")); n != 0 {
		t.Fatalf("%d failed deliveries", n)
	}

	r := e.Do(Request{Method: http.MethodPost, Path: fmt.Sprintf("%s/deliveries/%d/redeliver", path, d.ID), Header: key})
	var again struct {
		Data webhookDelivery `json:"data"`
	}
	r.JSON(t, &again)
	if r.Status != http.StatusAccepted || again.Data.EventID != d.EventID || again.Data.State != "pending" || again.Data.ID == d.ID {
		t.Fatalf("redeliver = %d %s", r.Status, r.Body)
	}
	wait("the redelivery", func() bool { return requests() == 2 })
	mu.Lock()
	if got[1].Header.Get("webhook-id") != d.EventID || string(bodies[1]) != string(bodies[0]) {
		t.Fatalf("redelivered %s %s", got[1].Header.Get("webhook-id"), bodies[1])
	}
	mu.Unlock()

	failing.Store(true)
	since := e.Clock.Now().UTC().Format(time.RFC3339)
	emit(webhooks.Event{Type: webhooks.EventMessageFailed, Key: "message:2", Data: map[string]any{"id": 2}})
	wait("a failed attempt", func() bool { d := log("?event_type=message.failed"); return len(d) == 1 && d[0].Attempts > 0 })
	e.Clock.Advance(2 * time.Hour)
	wait("the delivery to fail", func() bool { return len(log("?state=failed")) == 1 })
	failing.Store(false)
	r = e.Do(Request{Method: http.MethodPost, Path: path + "/deliveries/redeliver", Header: key, Body: map[string]any{"since": since}})
	if r.Status != http.StatusAccepted || string(r.Body) != `{"data":{"redelivered":1}}` {
		t.Fatalf("redeliver failed = %d %s", r.Status, r.Body)
	}
	wait("the failed event's redelivery", func() bool { return len(log("?state=succeeded&event_type=message.failed")) == 1 })

	r = e.Do(Request{Method: http.MethodPatch, Path: path, Header: key, Body: map[string]any{"enabled": false}})
	if r.Status != http.StatusOK {
		t.Fatalf("disable = %d %s", r.Status, r.Body)
	}
	for _, p := range []string{fmt.Sprintf("%s/deliveries/%d/redeliver", path, d.ID), path + "/deliveries/redeliver"} {
		r = e.Do(Request{Method: http.MethodPost, Path: p, Header: key, Body: map[string]any{"since": since}})
		if r.Status != http.StatusUnprocessableEntity || r.Map(t)["code"] != webhooks.CodeEndpointDisabled {
			t.Fatalf("POST %s to a disabled endpoint = %d %s", p, r.Status, r.Body)
		}
	}
}
