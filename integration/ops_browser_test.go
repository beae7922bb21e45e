package integration

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/ops"
	"github.com/bizmsg/platform/platform/queue"
)

// A message stuck behind a failing network explains itself: to its
// organization through GET /api/v1/messages/{id} and the dashboard's message
// page (attempts, the cause in plain words, the next attempt; nothing of
// River or of the schema), and to an operator through the console, which
// answers 401 without the operator's credentials (headless Chromium shows a
// 401 challenge as a load error, so plain requests check those) and, with
// them, shows the
// message's delivery job with its error in headless Chromium.
func TestOperatorConsoleShowsAStuckMessage(t *testing.T) {
	t.Parallel()
	flaky := &flakyNetwork{}
	e := startMsg(t, Options{
		Workers: true,
		Jobs:    queue.Config{DeliveryRetryBase: time.Hour, DeliveryRetryMax: time.Hour, FetchPollInterval: 50 * time.Millisecond},
		Network: func(base network.Network) network.Network { flaky.Network = base; return flaky },
	})
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	e.recipient(phoneN(10))
	flaky.failing.Store(true)
	m := accepted(t, e.send(org, text(sid, phoneN(10), "stuck behind the outage")))

	var got message
	poll(t, 20*time.Second, func() (bool, string) {
		got = e.getMessage(org, m.ID)
		return got.Delivery != nil && got.Delivery.State == queue.DeliveryRetrying, fmt.Sprintf("no failed attempt shown: %+v", got.Delivery)
	})
	d := got.Delivery
	if got.Status != "queued" || d.Attempts != 1 || d.LastError == nil || *d.LastError != queue.ReasonNetwork ||
		d.NextAttemptAt == nil || d.LastAttemptAt == nil {
		t.Fatalf("message %s, delivery %+v", got.Status, d)
	}
	raw := e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("%s/%d", messagesPath, m.ID), Header: org.Key()})
	for _, leak := range []string{org.Tenant.Schema, "river", "message_delivery", "connection refused"} {
		if strings.Contains(string(raw.Body), leak) {
			t.Fatalf("the organization's resource shows %q: %s", leak, raw.Body)
		}
	}

	// The dashboard's message page says the same.
	w := newWebClient(t, e.Env)
	wantPage(t, w.login(org.OwnerEmail, org.OwnerPassword), http.StatusSeeOther)
	wantPage(t, w.get(fmt.Sprintf("/messages/%d", m.ID)), http.StatusOK,
		"An attempt failed; it will be tried again", `id="delivery-attempts">1<`, queue.ReasonNetwork, `id="delivery-next"`)
	wantPage(t, w.get("/messages/999999"), http.StatusNotFound)

	job, err := queue.DeliveryJobOf(context.Background(), e.App.River, org.ID, m.ID)
	if err != nil || job == nil {
		t.Fatalf("delivery job of message %d: %v %v", m.ID, job, err)
	}
	const user, password = "operator", "correct horse battery"
	h, err := ops.Handler(t.Context(), e.App.River, ops.Config{User: user, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	console := httptest.NewServer(h)
	t.Cleanup(console.Close)

	for _, tc := range []struct{ name, user, password string }{
		{"no credentials", "", ""},
		{"wrong password", user, "not the password"},
		{"wrong user", "admin", password},
	} {
		for _, path := range []string{"/ops/", fmt.Sprintf("/ops/jobs/%d", job.ID), fmt.Sprintf("/ops/api/jobs/%d", job.ID), "/"} {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, console.URL+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.user != "" {
				req.SetBasicAuth(tc.user, tc.password)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
				t.Fatalf("%s: GET %s = %d, want 401 with a challenge", tc.name, path, resp.StatusCode)
			}
		}
	}

	b := NewBrowser(t, console.URL)
	b.SetHeader("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+password)))
	if status := b.Open(fmt.Sprintf("/ops/jobs/%d", job.ID)); status != http.StatusOK {
		t.Fatalf("the job's page = %d", status)
	}
	b.WaitText("body", "message_delivery")
	b.WaitText("body", queue.ReasonNetwork)
	b.WaitText("body", "connection refused")
	b.Screenshot("ops-stuck-delivery")

	// The job list of the console finds it among the retryable jobs.
	if status := b.Open("/ops/jobs?state=retryable"); status != http.StatusOK {
		t.Fatalf("the retryable jobs = %d", status)
	}
	b.WaitText("body", "message_delivery")
}
