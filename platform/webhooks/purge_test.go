package webhooks_test

import (
	"context"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/webhooks"
)

// Purge keeps pending deliveries and those within the retention, deletes
// older finished ones (with the events they carry).
func TestPurge(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	svc := f.service(webhooks.Config{Retention: 24 * time.Hour})
	tn := f.org()
	ctx := context.Background()
	e := f.create(svc, tn, "https://example.com/a")
	gone := f.create(svc, tn, "https://example.com/b", webhooks.EventAPIKeyExpiring)
	for _, k := range []string{"succeeded", "failed", "pending"} {
		f.emit(svc, tn, webhooks.Event{Type: webhooks.EventMessageSent, Key: k})
	}
	f.emit(svc, tn, webhooks.Event{Type: webhooks.EventAPIKeyExpiring, Key: "api_key:1"}) // to both endpoints
	if err := svc.Delete(ctx, tn, gone.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Pool.Exec(ctx, `UPDATE `+tn.Table("webhook_deliveries")+` SET state = key WHERE key IN ('succeeded', 'failed')`); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Hour)
	f.emit(svc, tn, webhooks.Event{Type: webhooks.EventMessageSent, Key: "recent"})
	if _, err := f.db.Pool.Exec(ctx, `UPDATE `+tn.Table("webhook_deliveries")+` SET state = 'succeeded' WHERE key = 'recent'`); err != nil {
		t.Fatal(err)
	}
	if n, err := svc.Purge(ctx, tn, f.clock.Now()); err != nil || n != 0 {
		t.Fatalf("purge within the retention: %d, %v", n, err)
	}

	now := f.clock.Now().Add(24*time.Hour - time.Hour) // the first five are past the retention
	n, err := svc.Purge(ctx, tn, now)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 || f.count(tn, "webhook_deliveries") != 3 || f.events(tn) != 3 {
		t.Fatalf("first purge: %d rows; %d deliveries of %d events left", n, f.count(tn, "webhook_deliveries"), f.events(tn))
	}
	if n, err = svc.Purge(ctx, tn, now); err != nil || n != 0 {
		t.Fatalf("second purge: %d rows, %v", n, err)
	}
	var keys []string
	for _, d := range f.deliveries(svc, tn, e.ID) {
		keys = append(keys, d.State)
	}
	if len(keys) != 3 || keys[0] != webhooks.StatePending || keys[1] != webhooks.StatePending || keys[2] != webhooks.StateSucceeded {
		t.Fatalf("left %v, want the old pending ones and the recent one", keys)
	}
}
