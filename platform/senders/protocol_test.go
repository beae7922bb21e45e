package senders_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/senders"
)

// TestTenantStatementsNotPrepared runs the statements on a tenant's
// sender_numbers that go through pgx (a send's Resolve; the locked read,
// the insert and the save of the service's transactions) several times
// each: their texts name the tenant's schema, so they run on the simple
// protocol and none is left prepared on a connection of the pool.
func TestTenantStatementsNotPrepared(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	tn := f.org("Acme")
	p := "+14155550123"
	f.account(p, true)
	s := f.register(tn, p)
	name := "Support"
	for range 3 {
		if _, err := f.svc.Resolve(ctx, tn, senders.SenderRef{ID: s.ID}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Resolve(ctx, tn, senders.SenderRef{Phone: p}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Update(ctx, tn, s.ID, senders.UpdateInput{DisplayName: &name}, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.svc.Verify(ctx, tn, s.ID, f.code(tn, s)); err != nil {
		t.Fatal(err)
	}
	conns := f.db.Pool.AcquireAllIdle(ctx)
	if len(conns) == 0 {
		t.Fatal("no idle connection to look at")
	}
	for _, c := range conns {
		var n int
		err := c.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%sender_numbers%'`,
			pgx.QueryExecModeSimpleProtocol).Scan(&n)
		c.Release()
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			t.Errorf("%d statements on sender_numbers prepared on a connection", n)
		}
	}
}
