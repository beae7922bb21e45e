package webhooks_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/webhooks"
)

// With no enabled endpoint subscribed to an event's type, Emit runs one
// statement and writes nothing: no outbox row, no delivery, no job. With
// subscribers it runs two and writes one outbox row, which the expansion
// turns into one delivery, carrying its event, and one job per event and
// subscribed endpoint, in the order of the events.
func TestEmit(t *testing.T) {
	t.Parallel()
	sent := webhooks.Event{Type: webhooks.EventMessageSent, Key: "message:7", Data: map[string]any{"id": 7}}
	delivered := webhooks.Event{Type: webhooks.EventMessageDelivered, Key: "message:7", Data: map[string]any{"id": 7}}
	tests := []struct {
		name string
		// setup creates the organization's endpoints.
		setup                                func(f *fixture, svc *webhooks.Service, tn db.Tenant)
		events                               []webhooks.Event
		wantStatements                       int32
		wantEvents, wantDeliveries, wantJobs int
	}{
		{"no endpoint", func(*fixture, *webhooks.Service, db.Tenant) {}, []webhooks.Event{sent}, 1, 0, 0, 0},
		{"another type", func(f *fixture, svc *webhooks.Service, tn db.Tenant) {
			f.create(svc, tn, "https://example.com/a", webhooks.EventMessageFailed)
		}, []webhooks.Event{sent, delivered}, 1, 0, 0, 0},
		{"disabled endpoint", func(f *fixture, svc *webhooks.Service, tn db.Tenant) {
			e := f.create(svc, tn, "https://example.com/a")
			if _, err := svc.Update(context.Background(), tn, e.ID, webhooks.EndpointPatch{Enabled: ptr(false)}); err != nil {
				f.t.Fatal(err)
			}
		}, []webhooks.Event{sent}, 1, 0, 0, 0},
		{"nothing to emit", func(f *fixture, svc *webhooks.Service, tn db.Tenant) {
			f.create(svc, tn, "https://example.com/a")
		}, nil, 0, 0, 0, 0},
		{"two endpoints, one for both types", func(f *fixture, svc *webhooks.Service, tn db.Tenant) {
			f.create(svc, tn, "https://example.com/a")
			f.create(svc, tn, "https://example.com/b", webhooks.EventMessageDelivered)
			f.create(svc, tn, "https://example.com/c", webhooks.EventAPIKeyExpiring)
		}, []webhooks.Event{sent, delivered}, 2, 2, 3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			var statements atomic.Int32
			counted := dbtest.Prepared(t, db.PreparedConfig{DB: f.db, Observe: func(string, error) { statements.Add(1) }})
			svc := f.service(webhooks.Config{Prepared: counted})
			tn := f.org()
			tt.setup(f, svc, tn)
			statements.Store(0)
			// Nothing wakes the expansion: the count is Emit's alone.
			f.emitLeft(webhooks.Config{Prepared: counted}, tn, tt.events...)
			if got := statements.Load(); got != tt.wantStatements {
				t.Errorf("Emit ran %d statements, want %d", got, tt.wantStatements)
			}
			wantRows := 0
			if tt.wantDeliveries > 0 {
				wantRows = 1
			}
			if got := f.count(tn, "webhook_outbox"); got != wantRows {
				t.Errorf("Emit wrote %d outbox rows, want %d", got, wantRows)
			}
			if n, err := svc.ExpandOutbox(context.Background(), tn); err != nil || n != wantRows {
				t.Fatalf("ExpandOutbox = %d, %v; want %d rows", n, err, wantRows)
			}
			if got := f.count(tn, "webhook_outbox"); got != 0 {
				t.Errorf("%d outbox rows left after the expansion", got)
			}
			if ev, d, j := f.events(tn), f.count(tn, "webhook_deliveries"), f.jobCount(); ev != tt.wantEvents ||
				d != tt.wantDeliveries || j != tt.wantJobs {
				t.Fatalf("wrote %d events, %d deliveries, %d jobs; want %d, %d, %d", ev, d, j, tt.wantEvents, tt.wantDeliveries, tt.wantJobs)
			}
		})
	}
}

// The stored body is the payload {"type", "timestamp", "data"} and the
// deliveries of one key follow the events' order; an unknown type is an
// error that rolls the caller's transaction back.
func TestEmitPayloadAndOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	svc := f.service(webhooks.Config{})
	tn := f.org()
	e := f.create(svc, tn, "https://example.com/a")
	at := time.Date(2026, 11, 22, 14, 3, 5, 123456789, time.UTC)
	f.emit(svc, tn,
		webhooks.Event{Type: webhooks.EventMessageSent, Key: "message:1", Data: map[string]any{"id": 1, "status": "sent"}, At: at},
		webhooks.Event{Type: webhooks.EventMessageDelivered, Key: "message:1", Data: map[string]any{"id": 1, "status": "delivered"}},
	)
	rows, err := f.db.Pool.Query(context.Background(), `SELECT body, event_type, key FROM `+tn.Table("webhook_deliveries")+` ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var body, typ, key string
		if err := rows.Scan(&body, &typ, &key); err != nil {
			t.Fatal(err)
		}
		if key != "message:1" {
			t.Fatalf("delivery key %q", key)
		}
		var p map[string]any
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			t.Fatal(err)
		}
		if len(p) != 3 || p["type"] != typ || p["data"] == nil {
			t.Fatalf("payload %s", body)
		}
		got = append(got, body)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], `{"type":"message.sent","timestamp":"2026-11-22T14:03:05.123456Z","data":{`) ||
		!strings.Contains(got[1], `"type":"message.delivered"`) {
		t.Fatalf("bodies in delivery order: %v", got)
	}
	if d := f.deliveries(svc, tn, e.ID); len(d) != 2 || d[0].EventType != webhooks.EventMessageSent || d[0].State != webhooks.StatePending {
		t.Fatalf("log %+v", d)
	}

	ctx := context.Background()
	err = pgx.BeginFunc(ctx, f.db.Pool, func(tx pgx.Tx) error {
		return svc.Emit(ctx, tx, tn, webhooks.Event{Type: "message.exploded", Key: "message:2"})
	})
	if err == nil || f.events(tn) != 2 {
		t.Fatalf("unknown type: %v", err)
	}
}
