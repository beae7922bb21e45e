package integration

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// TestAPIRateLimit covers the per-key request-rate limit of the Tenant API:
// RateLimit-* fields on every response, 429 rate_limited with Retry-After
// over the limit (and nothing done), one bucket per key, the organization's
// own limit, and the bucket refilling.
func TestAPIRateLimit(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{Env: map[string]string{"API_RATE_LIMIT": "2", "API_RATE_BURST": "3"}})
	org := e.Register(t)
	me := Request{Method: http.MethodGet, Path: "/api/v1/me", Header: org.Key()}

	for i, wantRemaining := range []string{"2", "1", "0"} {
		r := e.Do(me)
		if r.Status != http.StatusOK {
			t.Fatalf("request %d = %d %s", i+1, r.Status, r.Body)
		}
		for k, want := range map[string]string{"RateLimit-Limit": "3", "RateLimit-Remaining": wantRemaining, "RateLimit-Policy": "3;w=2"} {
			if got := r.Header.Get(k); got != want {
				t.Errorf("request %d: %s = %q, want %q", i+1, k, got, want)
			}
		}
	}

	// Over the limit: a key creation is refused and creates nothing.
	var before int
	if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM central.api_keys WHERE organization_id = $1`, org.ID).Scan(&before); err != nil {
		t.Fatal(err)
	}
	r := e.Do(Request{Method: http.MethodPost, Path: "/api/v1/api-keys", Header: org.Key(), Body: map[string]any{"name": "x", "scopes": []string{"messages.read"}}})
	if r.Status != http.StatusTooManyRequests {
		t.Fatalf("4th request = %d %s, want 429", r.Status, r.Body)
	}
	body := r.Map(t)
	if body["code"] != "rate_limited" || body["message"] == "" || body["request_id"] == "" {
		t.Errorf("429 body = %s", r.Body)
	}
	if got := r.Header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want 1", got)
	}
	if got := r.Header.Get("RateLimit-Remaining"); got != "0" {
		t.Errorf("429 RateLimit-Remaining = %q, want 0", got)
	}
	var after int
	if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM central.api_keys WHERE organization_id = $1`, org.ID).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("a refused request created a key: %d keys before, %d after", before, after)
	}

	// Another key of the same organization has its own bucket.
	other := e.APIKey(t, org)
	if r := e.Do(Request{Method: http.MethodGet, Path: "/api/v1/me", Header: KeyHeader(other)}); r.Status != http.StatusOK {
		t.Errorf("another key = %d %s, want 200", r.Status, r.Body)
	}

	// An organization's own limit wins over the default, at once.
	org2 := e.Register(t)
	if _, err := e.App.DB.Pool.Exec(context.Background(), `UPDATE central.organizations SET api_rate_limit = 100, api_rate_burst = 7 WHERE id = $1`, org2.ID); err != nil {
		t.Fatal(err)
	}
	r = e.Do(Request{Method: http.MethodGet, Path: "/api/v1/me", Header: org2.Key()})
	if r.Status != http.StatusOK || r.Header.Get("RateLimit-Limit") != "7" || r.Header.Get("RateLimit-Remaining") != "6" {
		t.Errorf("org with its own limit: %d Limit=%q Remaining=%q", r.Status, r.Header.Get("RateLimit-Limit"), r.Header.Get("RateLimit-Remaining"))
	}

	// The bucket refills at 2/s: one token after half a second. Time itself
	// is what is tested here (the buckets run on the database's clock, which
	// a test cannot advance).
	time.Sleep(550 * time.Millisecond)
	if r := e.Do(me); r.Status != http.StatusOK {
		t.Errorf("after refilling = %d %s, want 200", r.Status, r.Body)
	}
}
