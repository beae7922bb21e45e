package webhooks_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/webhooks"
)

// Create, list, get, patch, rotate and delete: the secret is in the answers
// of create and rotation only, never in a list or a read.
func TestEndpointLifecycle(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	svc := f.service(webhooks.Config{})
	tn := f.org()
	ctx := context.Background()

	desc := "  orders  "
	created, err := svc.Create(ctx, tn, webhooks.EndpointInput{URL: ptr("https://hooks.example.com/in"), Description: &desc})
	if err != nil {
		t.Fatal(err)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(created.Secret, "whsec_"))
	if !strings.HasPrefix(created.Secret, "whsec_") || err != nil || len(key) < 24 {
		t.Fatalf("secret %q", created.Secret)
	}
	if !created.Enabled || created.Description != "orders" || !slices.Equal(created.Events, webhooks.EventTypes()) {
		t.Fatalf("created %+v", created)
	}
	body, err := json.Marshal(created)
	if err != nil {
		t.Fatal(err)
	}
	var resource map[string]any
	if err := json.Unmarshal(body, &resource); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "url", "description", "events", "enabled", "disabled_reason", "created_at", "updated_at", "secret"} {
		if _, ok := resource[k]; !ok {
			t.Fatalf("created resource lacks %s: %s", k, body)
		}
	}
	if resource["disabled_reason"] != nil {
		t.Fatalf("disabled_reason of an enabled endpoint: %s", body)
	}

	noSecret := func(what string, e webhooks.Endpoint) {
		t.Helper()
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if e.Secret != "" || strings.Contains(string(b), "secret") || strings.Contains(string(b), "whsec_") {
			t.Fatalf("%s shows a secret: %s", what, b)
		}
	}
	got, err := svc.Get(ctx, tn, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	noSecret("get", got)
	second := f.create(svc, tn, "https://hooks.example.com/second", webhooks.EventMessageFailed, webhooks.EventMessageSent, webhooks.EventMessageSent)
	if !slices.Equal(second.Events, []string{webhooks.EventMessageSent, webhooks.EventMessageFailed}) {
		t.Fatalf("events stored as %v, want deduplicated in reference order", second.Events)
	}
	page, err := svc.List(ctx, tn, "1", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Items[0].ID != second.ID || page.NextCursor == "" {
		t.Fatalf("first page %+v", page)
	}
	noSecret("list", page.Items[0])
	page, err = svc.List(ctx, tn, "1", page.NextCursor)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Items[0].ID != created.ID || page.NextCursor != "" {
		t.Fatalf("second page %+v", page)
	}
	noSecret("list", page.Items[0])

	f.clock.Advance(time.Minute)
	patched, err := svc.Update(ctx, tn, created.ID, webhooks.EndpointPatch{
		URL: ptr("http://hooks.example.com/v2"), Events: &[]string{webhooks.EventMessageRead}, Enabled: ptr(false), Description: ptr(""),
	})
	if err != nil {
		t.Fatal(err)
	}
	if patched.URL != "http://hooks.example.com/v2" || !slices.Equal(patched.Events, []string{webhooks.EventMessageRead}) ||
		patched.Enabled || patched.DisabledReason == "" || patched.Description != "" || !patched.UpdatedAt.After(created.UpdatedAt) {
		t.Fatalf("patched %+v", patched)
	}
	noSecret("patch", patched)
	patched, err = svc.Update(ctx, tn, created.ID, webhooks.EndpointPatch{Enabled: ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
	if !patched.Enabled || patched.DisabledReason != "" || patched.URL != "http://hooks.example.com/v2" {
		t.Fatalf("re-enabled %+v", patched)
	}

	rotated, err := svc.RotateSecret(ctx, tn, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rotated.Secret, "whsec_") || rotated.Secret == created.Secret {
		t.Fatalf("rotated secret %q (was %q)", rotated.Secret, created.Secret)
	}
	got, err = svc.Get(ctx, tn, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	noSecret("get after rotation", got)

	if err := svc.Delete(ctx, tn, created.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Get(ctx, tn, created.ID); !isNotFound(err) {
		t.Fatalf("get after delete: %v", err)
	}
	if err := svc.Delete(ctx, tn, created.ID); !isNotFound(err) {
		t.Fatalf("second delete: %v", err)
	}
}

// Every invalid field is one 422 validation_failed naming it; private and
// reserved literal addresses and localhost are refused unless AllowPrivate.
func TestEndpointValidation(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	strict := f.service(webhooks.Config{})
	lax := f.service(webhooks.Config{AllowPrivate: true})
	tn := f.org()
	tests := []struct {
		name      string
		in        webhooks.EndpointInput
		field     string // "" when valid
		laxField  string // the field AllowPrivate still refuses
		wantInMsg string
	}{
		{"missing url", webhooks.EndpointInput{}, "url", "url", "required"},
		{"blank url", webhooks.EndpointInput{URL: ptr("  ")}, "url", "url", "required"},
		{"ftp", webhooks.EndpointInput{URL: ptr("ftp://example.com/x")}, "url", "url", "http or https"},
		{"javascript", webhooks.EndpointInput{URL: ptr("javascript:alert(1)")}, "url", "url", "http"},
		{"relative", webhooks.EndpointInput{URL: ptr("/hooks")}, "url", "url", "absolute"},
		{"no host", webhooks.EndpointInput{URL: ptr("https:///x")}, "url", "url", "host"},
		{"credentials", webhooks.EndpointInput{URL: ptr("https://u:p@example.com/")}, "url", "url", "credentials"},
		{"too long", webhooks.EndpointInput{URL: ptr("https://example.com/" + strings.Repeat("a", 2048))}, "url", "url", "2048"},
		{"loopback", webhooks.EndpointInput{URL: ptr("http://127.0.0.1:8080/")}, "url", "", "loopback"},
		{"ipv6 loopback", webhooks.EndpointInput{URL: ptr("http://[::1]/")}, "url", "", "loopback"},
		{"localhost", webhooks.EndpointInput{URL: ptr("http://localhost:3000/")}, "url", "", "loopback"},
		{"private", webhooks.EndpointInput{URL: ptr("https://10.1.2.3/")}, "url", "", "private"},
		{"metadata", webhooks.EndpointInput{URL: ptr("http://169.254.169.254/latest/meta-data")}, "url", "", "metadata"},
		{"unknown event", webhooks.EndpointInput{URL: ptr("https://example.com/"), Events: &[]string{"message.sent", "message.exploded"}}, "events", "events", "message.exploded"},
		{"no events", webhooks.EndpointInput{URL: ptr("https://example.com/"), Events: &[]string{}}, "events", "events", "at least one"},
		{"long description", webhooks.EndpointInput{URL: ptr("https://example.com/"), Description: ptr(strings.Repeat("d", 501))}, "description", "description", "500"},
		{"control in description", webhooks.EndpointInput{URL: ptr("https://example.com/"), Description: ptr("a\x07b")}, "description", "description", "control"},
		{"public address", webhooks.EndpointInput{URL: ptr("https://93.184.216.34/hook")}, "", "", ""},
		{"name", webhooks.EndpointInput{URL: ptr("HTTPS://hooks.example.com:8443/in?token=x")}, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range []struct {
				svc   *webhooks.Service
				field string
			}{{strict, tt.field}, {lax, tt.laxField}} {
				_, err := c.svc.Create(context.Background(), tn, tt.in)
				if c.field == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					continue
				}
				fields := fieldErrors(err)
				if len(fields[c.field]) == 0 || !strings.Contains(strings.Join(fields[c.field], " "), tt.wantInMsg) {
					t.Fatalf("err = %v (fields %v), want a %s error mentioning %q", err, fields, c.field, tt.wantInMsg)
				}
			}
		})
	}
	t.Run("the refusal names the setting that allows it", func(t *testing.T) {
		t.Parallel()
		_, err := strict.Create(context.Background(), tn, webhooks.EndpointInput{URL: ptr("http://127.0.0.1:9/")})
		if msg := strings.Join(fieldErrors(err)["url"], " "); !strings.Contains(msg, "WEBHOOK_ALLOW_PRIVATE=true") {
			t.Fatalf("url error %q does not name WEBHOOK_ALLOW_PRIVATE=true", msg)
		}
	})
	t.Run("patch", func(t *testing.T) {
		t.Parallel()
		e := f.create(lax, tn, "https://example.com/patch")
		_, err := strict.Update(context.Background(), tn, e.ID, webhooks.EndpointPatch{URL: ptr("http://192.168.0.10/"), Events: &[]string{"nope"}})
		fields := fieldErrors(err)
		if len(fields["url"]) == 0 || len(fields["events"]) == 0 {
			t.Fatalf("patch err = %v, want url and events errors", err)
		}
	})
}

// An organization has at most MaxEndpoints endpoints.
func TestEndpointLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	svc := f.service(webhooks.Config{MaxEndpoints: 2})
	tn := f.org()
	f.create(svc, tn, "https://example.com/1")
	f.create(svc, tn, "https://example.com/2")
	_, err := svc.Create(context.Background(), tn, webhooks.EndpointInput{URL: ptr("https://example.com/3")})
	if errorCode(err) != webhooks.CodeEndpointLimit {
		t.Fatalf("third endpoint: %v, want %s", err, webhooks.CodeEndpointLimit)
	}
	f.create(svc, f.org(), "https://example.com/other") // the limit is per organization
}

// Every operation on another organization's endpoint or delivery is 404,
// as for an id that does not exist.
func TestOtherOrganizationsEndpointsAreNotFound(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	svc := f.service(webhooks.Config{AllowPrivate: true})
	owner, other := f.org(), f.org()
	rc := newReceiver(t, nil)
	e := f.create(svc, owner, rc.URL)
	f.emit(svc, owner, webhooks.Event{Type: webhooks.EventMessageSent, Key: "message:1", Data: map[string]int{"id": 1}})
	d := f.deliveries(svc, owner, e.ID)
	if len(d) != 1 {
		t.Fatalf("deliveries %+v", d)
	}
	ctx := context.Background()
	ops := []struct {
		name string
		call func(id int64) error
	}{
		{"get", func(id int64) error { _, err := svc.Get(ctx, other, id); return err }},
		{"patch", func(id int64) error {
			_, err := svc.Update(ctx, other, id, webhooks.EndpointPatch{Enabled: ptr(false)})
			return err
		}},
		{"rotate", func(id int64) error { _, err := svc.RotateSecret(ctx, other, id); return err }},
		{"deliveries", func(id int64) error {
			_, err := svc.Deliveries(ctx, other, id, webhooks.DeliveryQuery{})
			return err
		}},
		{"redeliver", func(id int64) error { _, err := svc.Redeliver(ctx, other, id, d[0].ID); return err }},
		{"redeliver failed", func(id int64) error { _, err := svc.RedeliverFailed(ctx, other, id, time.Time{}); return err }},
		{"delete", func(id int64) error { return svc.Delete(ctx, other, id) }},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			t.Parallel()
			for _, id := range []int64{e.ID, e.ID + 1000, 0, -1} {
				if err := op.call(id); !isNotFound(err) {
					t.Fatalf("%s of endpoint %d of another organization: %v, want 404", op.name, id, err)
				}
			}
		})
	}
	t.Run("another endpoint's delivery", func(t *testing.T) {
		t.Parallel()
		e2 := f.create(svc, owner, rc.URL+"/2", webhooks.EventAPIKeyExpiring)
		if _, err := svc.Redeliver(ctx, owner, e2.ID, d[0].ID); !isNotFound(err) {
			t.Fatalf("redeliver through another endpoint: %v, want 404", err)
		}
	})
}
