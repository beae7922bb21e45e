package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/webhooks"
)

// A commit wakes the process's expansion: the deliveries and their jobs
// appear without anyone calling ExpandOutbox. A rollback leaves nothing.
func TestOutboxExpandsAfterCommit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	svc := f.service(webhooks.Config{})
	tn := f.org()
	e := f.create(svc, tn, "https://example.com/a")
	ctx := context.Background()
	rollback := errors.New("roll back")
	err := db.BeginFunc(ctx, f.db.Pool, func(tx pgx.Tx) error {
		if err := svc.Emit(ctx, tx, tn, webhooks.Event{Type: webhooks.EventMessageSent, Key: "message:1", Data: 1}); err != nil {
			return err
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatalf("BeginFunc = %v, want the rollback", err)
	}
	if err := db.BeginFunc(ctx, f.db.Pool, func(tx pgx.Tx) error {
		return svc.Emit(ctx, tx, tn,
			webhooks.Event{Type: webhooks.EventMessageSent, Key: "message:2", Data: 2},
			webhooks.Event{Type: webhooks.EventMessageDelivered, Key: "message:2", Data: 2})
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the committed events' deliveries", func() bool {
		return len(f.deliveries(svc, tn, e.ID)) == 2 && f.count(tn, "webhook_outbox") == 0
	})
	if got := f.jobCount(); got != 2 {
		t.Fatalf("%d delivery jobs, want 2", got)
	}
	ds := f.deliveries(svc, tn, e.ID)
	if ds[0].EventType != webhooks.EventMessageSent || ds[1].EventType != webhooks.EventMessageDelivered {
		t.Fatalf("deliveries %s then %s, want sent then delivered", ds[0].EventType, ds[1].EventType)
	}
}

// Emit in a transaction db.BeginFunc did not begin fails: nothing would
// wake the expansion at its commit, and the events would wait a minute for
// the sweep. With no subscriber there is nothing to wake, and it succeeds.
func TestEmitNeedsACommitHook(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	svc := f.service(webhooks.Config{})
	tn := f.org()
	ctx := context.Background()
	emit := func() error {
		return pgx.BeginFunc(ctx, f.db.Pool, func(tx pgx.Tx) error {
			return svc.Emit(ctx, tx, tn, webhooks.Event{Type: webhooks.EventMessageSent, Key: "message:1", Data: 1})
		})
	}
	if err := emit(); err != nil {
		t.Fatalf("Emit without subscribers in a plain pgx transaction = %v, want nil", err)
	}
	f.create(svc, tn, "https://example.com/a")
	if err := emit(); !errors.Is(err, db.ErrNoCommitHook) {
		t.Fatalf("Emit in a plain pgx transaction = %v, want db.ErrNoCommitHook", err)
	}
	if got := f.count(tn, "webhook_outbox"); got != 0 {
		t.Fatalf("%d outbox rows after the failed Emit, want 0", got)
	}
}

// Rows expand in the order their transactions recorded them, into
// deliveries dated when the events were recorded; an endpoint deleted in
// between gets none, one disabled in between gets its deliveries (they
// fail at their attempt, as deliveries made before would). So with the
// one statement of a single server and with the routed statements of
// Citus (Config.Routed), which the test runs on one server.
func TestOutboxExpansion(t *testing.T) {
	t.Parallel()
	for _, routed := range []bool{false, true} {
		t.Run(fmt.Sprintf("routed=%v", routed), func(t *testing.T) {
			t.Parallel()
			testOutboxExpansion(t, routed)
		})
	}
}

func testOutboxExpansion(t *testing.T, routed bool) {
	f := newFixture(t)
	svc := f.service(webhooks.Config{Routed: routed})
	tn := f.org()
	ctx := context.Background()
	a := f.create(svc, tn, "https://example.com/a")
	b := f.create(svc, tn, "https://example.com/b")
	c := f.create(svc, tn, "https://example.com/c")
	recorded := f.clock.Now().Truncate(time.Microsecond)
	for i := range 3 {
		f.emitLeft(webhooks.Config{}, tn,
			webhooks.Event{Type: webhooks.EventMessageSent, Key: "message:1", Data: i},
			webhooks.Event{Type: webhooks.EventMessageDelivered, Key: "message:1", Data: i})
	}
	if err := svc.Delete(ctx, tn, b.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Update(ctx, tn, c.ID, webhooks.EndpointPatch{Enabled: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Hour)
	if n, err := svc.ExpandOutbox(ctx, tn); err != nil || n != 3 {
		t.Fatalf("ExpandOutbox = %d, %v; want 3 rows", n, err)
	}
	for _, e := range []webhooks.Endpoint{a, c} {
		ds := f.deliveries(svc, tn, e.ID)
		if len(ds) != 6 {
			t.Fatalf("endpoint %d has %d deliveries, want 6", e.ID, len(ds))
		}
		for i, d := range ds {
			want := []string{webhooks.EventMessageSent, webhooks.EventMessageDelivered}[i%2]
			if d.EventType != want || !d.CreatedAt.Equal(recorded) {
				t.Fatalf("delivery %d of endpoint %d: %s created %s, want %s created %s", i, e.ID, d.EventType, d.CreatedAt, want, recorded)
			}
		}
	}
	if n := f.jobCount(); n != 12 {
		t.Fatalf("%d delivery jobs, want 12 (none for the deleted endpoint)", n)
	}
	if n, failed := svc.OutboxExpanded(), svc.OutboxFailures(); n != 3 || failed != 0 {
		t.Fatalf("counted %d rows expanded and %d failures, want 3 and 0", n, failed)
	}
	gone := db.Tenant{OrgID: tn.OrgID + 1000, Schema: db.SchemaFor(tn.OrgID + 1000)}
	if _, err := svc.ExpandOutbox(ctx, gone); err == nil {
		t.Fatal("ExpandOutbox of a schema that does not exist succeeded")
	}
	if failed := svc.OutboxFailures(); failed != 1 {
		t.Fatalf("counted %d failures, want 1", failed)
	}
}

// The sweep finds a row no process expanded and wakes this process's
// expansion; an empty outbox wakes nothing.
func TestSweepOutbox(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	svc := f.service(webhooks.Config{})
	tn := f.org()
	e := f.create(svc, tn, "https://example.com/a")
	ctx := context.Background()
	if woke, err := svc.SweepOutbox(ctx, tn); err != nil || woke {
		t.Fatalf("SweepOutbox on an empty outbox = %t, %v", woke, err)
	}
	f.emitLeft(webhooks.Config{}, tn, webhooks.Event{Type: webhooks.EventMessageSent, Key: "message:1", Data: 1})
	if got := f.count(tn, "webhook_outbox"); got != 1 {
		t.Fatalf("%d outbox rows before the sweep, want 1 (nothing woke an expansion)", got)
	}
	if woke, err := svc.SweepOutbox(ctx, tn); err != nil || !woke {
		t.Fatalf("SweepOutbox = %t, %v; want it to wake the expansion", woke, err)
	}
	waitFor(t, "the swept row's delivery", func() bool {
		return len(f.deliveries(svc, tn, e.ID)) == 1 && f.count(tn, "webhook_outbox") == 0
	})
}

// While the yield gate is closed an expansion takes one row a transaction,
// so the deferred writes come back into a busy send path a little at a
// time; an open gate takes them in batches.
func TestOutboxBatchesYield(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		busy    bool // the foreground, closing the gate
		wantTxs int32
		want    string
	}{
		{"open gate", false, 1, "one transaction for the three rows"},
		{"closed gate", true, 3, "a transaction for each of the three rows"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			gate := newGate(t, 1000)
			if c.busy {
				gate.busy()
			}
			var locks atomic.Int32
			counted := dbtest.Prepared(t, db.PreparedConfig{DB: f.db, Observe: func(q string, _ error) {
				if strings.Contains(q, "SELECT pg_advisory_xact_lock(") { // queries/lock_outbox.sql
					locks.Add(1)
				}
			}})
			svc := f.service(webhooks.Config{Yield: gate.Gate, Prepared: counted})
			tn := f.org()
			e := f.create(svc, tn, "https://example.com/a")
			for i := range 3 {
				f.emitLeft(webhooks.Config{}, tn, webhooks.Event{Type: webhooks.EventMessageSent, Key: "message:1", Data: i})
			}
			if n, err := svc.ExpandOutbox(context.Background(), tn); err != nil || n != 3 {
				t.Fatalf("ExpandOutbox = %d, %v; want 3 rows", n, err)
			}
			// The last transaction found the outbox empty.
			if got := locks.Load() - 1; got != c.wantTxs {
				t.Fatalf("expanded in %d transactions, want %s", got, c.want)
			}
			if got := len(f.deliveries(svc, tn, e.ID)); got != 3 {
				t.Fatalf("%d deliveries, want 3", got)
			}
		})
	}
}
