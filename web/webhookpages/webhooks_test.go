package webhookpages

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/webhooks"
	"github.com/bizmsg/platform/web"
)

func TestWebhookTexts(t *testing.T) {
	t.Parallel()
	for _, typ := range webhooks.EventTypes() {
		if eventText(typ) == typ || eventText(typ) == "" {
			t.Errorf("event type %s has no description", typ)
		}
	}
	for _, tc := range []struct {
		in   time.Duration
		want string
	}{
		{24 * time.Hour, "24 hours"}, {time.Hour, "1 hour"}, {90 * time.Minute, "90 minutes"}, {30 * time.Second, "30 seconds"},
	} {
		if got := hoursText(tc.in); got != tc.want {
			t.Errorf("hoursText(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for state, want := range map[string]string{
		webhooks.StatePending: "warn", webhooks.StateSucceeded: "ok", webhooks.StateFailed: "bad",
	} {
		if got := deliveryTone(state); got != want {
			t.Errorf("deliveryTone(%s) = %s, want %s", state, got, want)
		}
	}
	for _, code := range []string{"webhook_deleted", "webhook_enabled", "webhook_disabled", "redelivered",
		"failed_redelivered", "nothing_to_redeliver"} {
		if webhookNotice(code) == "" {
			t.Errorf("notice %s has no text", code)
		}
	}
	if webhookNotice("<script>") != "" {
		t.Error("an unknown notice code has a text")
	}
}

// The endpoint page offers each action to whom it is for: owners and
// admins manage (redelivery only while the endpoint is enabled), members
// read; a disabled endpoint shows why; no read shows a secret.
func TestWebhookPageRender(t *testing.T) {
	t.Parallel()
	pages, err := web.ParsePages()
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 11, 22, 14, 3, 0, 0, time.UTC)
	code, latency := 200, 42
	delivery := deliveryView{Delivery: webhooks.Delivery{ID: 7, EventID: "msg_X", EventType: webhooks.EventMessageSent,
		State: webhooks.StateSucceeded, Attempts: 1, LastStatusCode: &code, LatencyMS: &latency, CreatedAt: created}, Tone: "ok"}
	endpoint := func(enabled bool) endpointView {
		e := webhooks.Endpoint{ID: 3, URL: "https://example.com/<hook>", Events: webhooks.EventTypes(), Enabled: enabled,
			CreatedAt: created, UpdatedAt: created}
		if !enabled {
			e.DisabledReason = "Disabled after every delivery attempt failed for 24 hours; the last one: HTTP 500."
		}
		return viewEndpoint(e)
	}
	for _, tc := range []struct {
		name      string
		role      string
		enabled   bool
		want, not []string
	}{
		{"admin, enabled", accounts.RoleAdmin, true,
			[]string{`action="/webhooks/3/rotate"`, `action="/webhooks/3/disable"`, `href="/webhooks/3/delete"`,
				`action="/webhooks/3/deliveries/7/redeliver"`, `action="/webhooks/3/deliveries/redeliver"`,
				`name="csrf_token" value="tok"`, "https://example.com/&lt;hook&gt;", `data-state="succeeded"`, "42 ms", ">200<"},
			[]string{"disabled-reason", `action="/webhooks/3/enable"`, "whsec_"}},
		{"owner, disabled", accounts.RoleOwner, false,
			[]string{`id="disabled-reason"`, "failed for 24 hours", `action="/webhooks/3/enable"`, "Enable the endpoint to redeliver"},
			[]string{`action="/webhooks/3/deliveries/7/redeliver"`, `action="/webhooks/3/deliveries/redeliver"`, `action="/webhooks/3/disable"`}},
		{"member", accounts.RoleMember, false,
			[]string{`id="disabled-reason"`, `data-state="succeeded"`, "Owners and admins can send failed deliveries again"},
			[]string{`method="post"` + ` action="/webhooks/3`, `href="/webhooks/3/delete"`, "Fix the receiver"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data := web.PageData{Title: "Webhook endpoint", Nav: "webhooks", CSRF: "tok",
				Session: &web.Session{Principal: accounts.Principal{Role: tc.role}},
				Data: webhookData{Endpoint: endpoint(tc.enabled), Deliveries: []deliveryView{delivery},
					States: []string{webhooks.StatePending, webhooks.StateSucceeded, webhooks.StateFailed},
					Events: webhooks.EventTypes(), Overlap: "24 hours"}}
			var buf bytes.Buffer
			if err := pages["webhook"].Execute(&buf, data); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			for _, s := range tc.want {
				if !strings.Contains(out, s) {
					t.Errorf("page lacks %q", s)
				}
			}
			for _, s := range tc.not {
				if strings.Contains(out, s) {
					t.Errorf("page has %q", s)
				}
			}
		})
	}
}
