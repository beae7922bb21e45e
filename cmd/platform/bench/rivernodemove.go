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

// downFigures is bench river-node's worker node down: what one send of
// each path does for a tenant on the worker still up and for one on the
// worker stopped, and how long the stopped worker's tenant took to send
// again once it was started.
type downFigures struct {
	Node string `json:"node"`
	// Up and Down are each path's outcome for a tenant on the worker up
	// and on the one down: "ok" or the error.
	OutboxUp    string `json:"outbox_up"`
	PerNodeUp   string `json:"per_node_up"`
	OutboxDown  string `json:"outbox_down"`
	PerNodeDown string `json:"per_node_down"`
	// OutboxUpInRiver is whether the up tenant's outbox row reached the
	// coordinator's River while the other worker was down.
	OutboxUpInRiver bool `json:"outbox_up_in_river"`
	// Back is from the worker's start until its tenant's send committed.
	Back time.Duration `json:"back_ns"`
}

// down stops the worker of river_node2 as a crash does (citus-cluster
// kill), sends once by each path for a tenant on each worker, starts it
// again and waits until its tenant sends.
func (b *riverNodeBench) down(ctx context.Context, outbox, perNode *riverPath) (*downFigures, error) {
	_, downNode, err := b.nodeTenant("river_node2")
	if err != nil {
		return nil, err
	}
	var upT, downT benchTenant
	for _, t := range b.tenants {
		if b.nodeOf[t.Tenant.Schema] == downNode {
			downT = t
		} else {
			upT = t
		}
	}
	name, err := b.cluster.nodeName(downNode)
	if err != nil {
		return nil, err
	}
	f := &downFigures{Node: name + " " + downNode}
	outcome := func(err error) string {
		if err != nil {
			return err.Error()
		}
		return "ok"
	}
	before, err := outbox.inRiver()
	if err != nil {
		return f, err
	}
	if _, err := b.cluster.run(ctx, "kill", name, b.cluster.dir); err != nil {
		return f, err
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	f.OutboxUp = outcome(b.send(sctx, upT, outbox.inserter(upT)))
	f.PerNodeUp = outcome(b.send(sctx, upT, perNode.inserter(upT)))
	f.OutboxDown = outcome(b.send(sctx, downT, outbox.inserter(downT)))
	f.PerNodeDown = outcome(b.send(sctx, downT, perNode.inserter(downT)))
	cancel()
	if f.OutboxUp == "ok" {
		f.OutboxUpInRiver = waitFor(ctx, 10*time.Second, func() (bool, error) {
			n, err := outbox.inRiver()
			return n > before, err
		}) == nil
	}
	t0 := time.Now()
	if _, err := b.cluster.run(ctx, "start", b.cluster.dir); err != nil {
		return f, err
	}
	if err := waitFor(ctx, time.Minute, func() (bool, error) {
		return b.send(ctx, downT, outbox.inserter(downT)) == nil, nil
	}); err != nil {
		return f, fmt.Errorf("%s back: %w", name, err)
	}
	f.Back = time.Since(t0)
	return f, nil
}
