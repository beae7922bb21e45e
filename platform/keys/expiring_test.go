package keys_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/keys"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/bizmsg/platform/platform/webhooks"
)

// recorder keeps the events it is given, after the statement that proves it
// runs inside the caller's transaction on the tenant's schema.
type recorder struct{ events []webhooks.Event }

func (r *recorder) Emit(ctx context.Context, tx pgx.Tx, t db.Tenant, evs ...webhooks.Event) error {
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+t.Table("notices")).Scan(&n); err != nil {
		return err
	}
	r.events = append(r.events, evs...)
	return nil
}

func TestNotifyExpiring(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	ctx := context.Background()
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	mig, err := migrate.New(migrate.Config{Pool: f.db.Pool, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	tn, err := db.NewTenant(f.org, db.SchemaFor(f.org))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mig.Tenant(ctx, tn); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	cfg := f.cfg
	cfg.Events = rec
	svc, err := keys.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	actor := keys.Actor{UserID: f.user}
	soon := f.create(t, actor, 10, "messages.read")
	f.create(t, actor, 30, "messages.read")
	revoked := f.create(t, actor, 9, "messages.read")
	if err := svc.Revoke(ctx, f.org, actor, revoked.Key.ID); err != nil {
		t.Fatal(err)
	}

	// Ten days before: nothing is due.
	if n, err := svc.NotifyExpiring(ctx, f.clock.Now()); err != nil || n != 0 {
		t.Fatalf("NotifyExpiring 10 days before = %d, %v", n, err)
	}
	// Four days later the 10-day key is within 7 days of expiry: reported
	// once, however often the job runs; the revoked one never.
	f.clock.Advance(4 * 24 * time.Hour)
	for i, want := range []int{1, 0, 0} {
		if n, err := svc.NotifyExpiring(ctx, f.clock.Now()); err != nil || n != want {
			t.Fatalf("run %d: NotifyExpiring = %d, %v; want %d", i, n, err, want)
		}
		f.clock.Advance(time.Hour)
	}
	if len(rec.events) != 1 {
		t.Fatalf("%d events, want 1", len(rec.events))
	}
	ev := rec.events[0]
	data, err := json.Marshal(ev.Data)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		ID     int64    `json:"id"`
		Scopes []string `json:"scopes"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if ev.Type != webhooks.EventAPIKeyExpiring || res.ID != soon.Key.ID || !slices.Equal(res.Scopes, []string{"messages.read"}) {
		t.Fatalf("event %s %s %s", ev.Type, ev.Key, data)
	}
	// A key past its expiry is not "expiring".
	f.clock.Advance(10 * 24 * time.Hour)
	if n, err := svc.NotifyExpiring(ctx, f.clock.Now()); err != nil || n != 0 {
		t.Fatalf("after expiry: %d, %v", n, err)
	}
}
