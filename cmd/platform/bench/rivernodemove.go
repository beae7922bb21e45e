package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// move queues b.moveJobs sends' jobs in the River of a tenant's worker
// (nothing works them), then moves the tenant's schema to the other worker
// while two senders keep writing its messages and their jobs into that
// River, and then counts what stayed behind and what one send commits in
// two phases.
func (b *riverNodeBench) move(ctx context.Context) (*moveFigures, error) {
	s := "river_node1"
	t, from, err := b.nodeTenant(s)
	if err != nil {
		return nil, err
	}
	var to, toSchema string
	for w, ns := range b.schemaOn {
		if w != from {
			to, toSchema = w, ns
		}
	}
	if to == "" {
		return nil, fmt.Errorf("no worker besides %s", from)
	}
	old, err := b.riverClient(b.d.Pool, s, false)
	if err != nil {
		return nil, err
	}
	next, err := b.riverClient(b.d.Pool, toSchema, false)
	if err != nil {
		return nil, err
	}
	m := &moveFigures{Schema: t.Tenant.Schema, From: from, To: to}
	queuedSQL := "SELECT count(*) FROM " + s + ".river_job WHERE state = 'available' AND args->>'schema' = $1"
	for range b.moveJobs {
		if err := b.send(ctx, t, old); err != nil {
			return m, fmt.Errorf("queue a job: %w", err)
		}
	}
	if m.Queued, err = b.count(ctx, queuedSQL, t.Tenant.Schema); err != nil {
		return m, err
	}

	var ok, failed, slowest atomic.Int64
	var firstErr atomic.Value
	var moved atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !moved.Load() && ctx.Err() == nil {
				t0 := time.Now()
				err := b.send(ctx, t, old)
				if d := int64(time.Since(t0)); d > slowest.Load() {
					slowest.Store(d)
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				ok.Add(1)
			}
		})
	}
	host, port, _ := strings.Cut(to, ":")
	t0 := time.Now()
	_, err = b.d.Pool.Exec(ctx, "SELECT citus_schema_move($1, $2, $3::int, shard_transfer_mode => 'auto')", t.Tenant.Schema, host, port)
	m.Took = time.Since(t0)
	moved.Store(true)
	wg.Wait()
	m.DuringOK, m.DuringErr, m.DuringMax = ok.Load(), failed.Load(), time.Duration(slowest.Load())
	if e, _ := firstErr.Load().(string); e != "" {
		m.FirstErr = e
	}
	if err != nil {
		return m, fmt.Errorf("citus_schema_move: %w", err)
	}
	nodes, err := b.schemaNodes(ctx)
	if err != nil {
		return m, err
	}
	if nodes[t.Tenant.Schema] != to || nodes[s] != from {
		return m, fmt.Errorf("after the move %s is on %s and %s on %s", t.Tenant.Schema, nodes[t.Tenant.Schema], s, nodes[s])
	}
	if m.Stranded, err = b.count(ctx, queuedSQL, t.Tenant.Schema); err != nil {
		return m, err
	}
	twoPC := func(into string) (int64, error) {
		c := old
		if into == toSchema {
			c = next
		}
		before, err := b.count(ctx, "SELECT count(*) FROM pg_dist_transaction")
		if err != nil {
			return 0, err
		}
		if err := b.send(ctx, t, c); err != nil {
			return 0, fmt.Errorf("send into %s: %w", into, err)
		}
		after, err := b.count(ctx, "SELECT count(*) FROM pg_dist_transaction")
		return after - before, err
	}
	if m.OldTwoPhase, err = twoPC(s); err != nil {
		return m, err
	}
	if m.NewTwoPhase, err = twoPC(toSchema); err != nil {
		return m, err
	}
	return m, nil
}
