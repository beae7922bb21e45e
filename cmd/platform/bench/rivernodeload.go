package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/joboutbox"
	"github.com/bizmsg/platform/platform/queue"
)

// send is one transaction of the send's shape: the tenant's message and
// its delivery job through ins (the outbox, or a node's River client), in
// one transaction (db.BeginFunc, whose commit wakes the outbox's mover).
func (b *riverNodeBench) send(ctx context.Context, t benchTenant, ins queue.Inserter) error {
	return db.BeginFunc(ctx, b.d.Pool, func(tx pgx.Tx) error {
		var id int64
		if err := tx.QueryRow(ctx, `INSERT INTO `+t.Tenant.Table("messages")+` (sender_number_id, to_phone, type, content)
			VALUES ($1, $2, 'text', 'river-node bench') RETURNING id`, t.Senders[0], recipientPhone(0)).Scan(&id); err != nil {
			return fmt.Errorf("message: %w", err)
		}
		_, err := ins.InsertManyFastTx(ctx, tx, []river.InsertManyParams{queue.DeliveryJob(queue.DeliverArgs{
			TenantRef: queue.RefOf(t.Tenant), MessageID: id, SenderID: t.Senders[0]})})
		if err != nil {
			return fmt.Errorf("job: %w", err)
		}
		return nil
	})
}

// nodeTenant is a tenant on node schema s's worker.
func (b *riverNodeBench) nodeTenant(s string) (benchTenant, string, error) {
	for _, t := range b.tenants {
		if w := b.nodeOf[t.Tenant.Schema]; b.schemaOn[w] == s {
			return t, w, nil
		}
	}
	return benchTenant{}, "", fmt.Errorf("no tenant on the worker of %s", s)
}

// riverPath is one way of queueing a send's job: its inserter for a
// tenant, whether the jobs are all in River (outbox: moved), how many
// jobs River holds, and the clients that work them.
type riverPath struct {
	inserter func(benchTenant) queue.Inserter
	// drained reports whether every job is in River; late, when the
	// wait has been long, it may sweep for rows no mover was woken for.
	drained func(late bool) (bool, error)
	inRiver func() (int64, error)
	workers []*river.Client[pgx.Tx]
	schemas []string
	close   func()
}

// outboxPath is the job outbox as the platform runs it on Citus: each
// transaction writes the message and an outbox row on the tenant's
// worker; the process's mover carries them into the coordinator's River.
func (b *riverNodeBench) outboxPath(ctx context.Context) (*riverPath, error) {
	ins, err := b.riverClient(b.d.Pool, "river", false)
	if err != nil {
		return nil, err
	}
	prep, err := db.NewPrepared(db.PreparedConfig{DB: b.d})
	if err != nil {
		return nil, err
	}
	ob, err := joboutbox.New(joboutbox.Config{DB: b.d, Prepared: prep, River: ins,
		Logger: slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return nil, err
	}
	wc, err := b.riverClient(b.d.Pool, "river", true)
	if err != nil {
		ob.Close()
		return nil, err
	}
	swept := &b.swept
	return &riverPath{
		inserter: func(benchTenant) queue.Inserter { return ob },
		drained: func(late bool) (bool, error) {
			for _, t := range b.tenants {
				if !late {
					n, err := b.count(ctx, "SELECT count(*) FROM "+t.Tenant.Table("job_outbox"))
					if err != nil || n > 0 {
						return false, err
					}
					continue
				}
				// Rows still there after seconds: the platform's sweep,
				// the backstop of a wake lost, wakes their mover; counted.
				found, err := ob.Sweep(ctx, t.Tenant)
				if err != nil || found {
					if found {
						swept.Add(1)
					}
					return false, err
				}
			}
			return true, nil
		},
		inRiver: func() (int64, error) { return b.count(ctx, "SELECT count(*) FROM river.river_job") },
		workers: []*river.Client[pgx.Tx]{wc},
		schemas: []string{"river"},
		close:   ob.Close,
	}, nil
}

// perNodePath is River per node: each transaction writes the message and
// its River job into the River schema on the tenant's worker; a River
// client per node schema works them.
func (b *riverNodeBench) perNodePath(ctx context.Context) (*riverPath, error) {
	p := &riverPath{drained: func(bool) (bool, error) { return true, nil }, close: func() {}}
	inserters := map[string]queue.Inserter{}
	var union []string
	for _, s := range slices.Sorted(maps.Values(b.schemaOn)) {
		c, err := b.riverClient(b.d.Pool, s, false)
		if err != nil {
			return nil, err
		}
		inserters[s] = c
		wc, err := b.riverClient(b.d.Pool, s, true)
		if err != nil {
			return nil, err
		}
		p.workers = append(p.workers, wc)
		p.schemas = append(p.schemas, s)
		union = append(union, "SELECT count(*) AS n FROM "+s+".river_job")
	}
	p.inRiver = func() (int64, error) {
		return b.count(ctx, "SELECT sum(n)::bigint FROM ("+strings.Join(union, " UNION ALL ")+") j")
	}
	p.inserter = func(t benchTenant) queue.Inserter { return inserters[b.schemaOn[b.nodeOf[t.Tenant.Schema]]] }
	return p, nil
}

// paths runs the outbox and River per node for b.rounds rounds each,
// alternated, nothing working the jobs; then works each path's jobs.
func (b *riverNodeBench) paths(ctx context.Context) error {
	outbox, err := b.outboxPath(ctx)
	if err != nil {
		return err
	}
	defer outbox.close()
	perNode, err := b.perNodePath(ctx)
	if err != nil {
		return err
	}
	b.rep.Outbox, b.rep.PerNode = &pathFigures{}, &pathFigures{}
	for r := range b.rounds {
		for _, p := range []struct {
			path *riverPath
			f    *pathFigures
			name string
		}{{outbox, b.rep.Outbox, "outbox"}, {perNode, b.rep.PerNode, "River per node"}} {
			fmt.Fprintf(b.stderr, "river-node: round %d, %s\n", r+1, p.name)
			round, err := b.insertRound(ctx, p.path)
			if err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			p.f.add(round)
		}
	}
	b.rep.OutboxSweeps = b.swept.Load()
	fmt.Fprintln(b.stderr, "river-node: working the jobs")
	if err := b.work(ctx, outbox, b.rep.Outbox); err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	if err := b.work(ctx, perNode, b.rep.PerNode); err != nil {
		return fmt.Errorf("river per node: %w", err)
	}
	fmt.Fprintln(b.stderr, "river-node: a worker node down")
	if b.rep.Down, err = b.down(ctx, outbox, perNode); err != nil {
		return fmt.Errorf("worker down: %w", err)
	}
	return nil
}

// insertRound runs b.conc senders for b.dur, each sending for the tenants
// in turn through p, and waits until every job is in River.
func (b *riverNodeBench) insertRound(ctx context.Context, p *riverPath) (roundFigures, error) {
	var f roundFigures
	base, err := p.inRiver()
	if err != nil {
		return f, err
	}
	twoPC, err := b.count(ctx, "SELECT count(*) FROM pg_dist_transaction")
	if err != nil {
		return f, err
	}
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	cpu0, start := scopeCPU(b.dbName, os.Getpid()), time.Now()
	// The senders stop between transactions: a deadline cancelling one in
	// its commit could leave it committed without its commit hook, the
	// outbox's wake, having run (its rows then wait for the sweep).
	deadline := start.Add(b.dur)
	var wg sync.WaitGroup
	for i := range b.conc {
		wg.Go(func() {
			for n := i; time.Now().Before(deadline) && ctx.Err() == nil; n += b.conc {
				t := b.tenants[n%len(b.tenants)]
				if err := b.send(ctx, t, p.inserter(t)); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	sent := time.Since(start)
	f.Jobs, f.Errors = ok.Load(), failed.Load()
	if e, _ := firstErr.Load().(string); e != "" {
		f.FirstErr = e
	}
	waiting := time.Now()
	if err := waitFor(ctx, time.Minute, func() (bool, error) {
		d, err := p.drained(time.Since(waiting) > 5*time.Second)
		if err != nil || !d {
			return false, err
		}
		n, err := p.inRiver()
		return n-base >= f.Jobs, err
	}); err != nil {
		return f, fmt.Errorf("jobs into River: %w", err)
	}
	cpu1, landed := scopeCPU(b.dbName, os.Getpid()), time.Since(start)
	f.InsertRate = roundRate(float64(f.Jobs) / sent.Seconds())
	f.InRiverRate = roundRate(float64(f.Jobs) / landed.Seconds())
	f.InsertCPU = cpuPerMessage(cpu1.since(cpu0), f.Jobs)
	n, err := b.count(ctx, "SELECT count(*) FROM pg_dist_transaction")
	f.TwoPhase = n - twoPC
	return f, err
}

// work starts p's workers and waits until they have completed every job
// of p's River schemas, or River fails to fetch them.
func (b *riverNodeBench) work(ctx context.Context, p *riverPath, f *pathFigures) error {
	total, err := b.unfinished(ctx, p.schemas)
	if err != nil {
		return err
	}
	mark := b.logs.mark()
	cpu0, start := scopeCPU(b.dbName, os.Getpid()), time.Now()
	for _, w := range p.workers {
		if err := w.Start(ctx); err != nil {
			return fmt.Errorf("start River: %w", err)
		}
	}
	err = waitFor(ctx, 2*time.Minute, func() (bool, error) {
		if e := b.logs.errOf("Error fetching jobs", mark); e != "" {
			return false, fetchError{e}
		}
		n, err := b.unfinished(ctx, p.schemas)
		return n == 0, err
	})
	worked, cpu1 := time.Since(start), scopeCPU(b.dbName, os.Getpid())
	for _, w := range p.workers {
		err = errors.Join(err, w.Stop(context.WithoutCancel(ctx)))
	}
	if we := (fetchError{}); errors.As(err, &we) {
		f.WorkErr = we.err
		return nil
	}
	if err != nil {
		return fmt.Errorf("work the jobs: %w", err)
	}
	f.WorkRate = roundRate(float64(total) / worked.Seconds())
	f.WorkCPU = cpuPerMessage(cpu1.since(cpu0), total)
	return nil
}

// unfinished is the jobs of River schemas not completed yet.
func (b *riverNodeBench) unfinished(ctx context.Context, schemas []string) (int64, error) {
	parts := make([]string, len(schemas))
	for i, s := range schemas {
		parts[i] = "SELECT count(*) AS n FROM " + s + ".river_job WHERE state <> 'completed'"
	}
	return b.count(ctx, "SELECT sum(n)::bigint FROM ("+strings.Join(parts, " UNION ALL ")+") j")
}

func roundRate(v float64) float64 { return float64(int64(v + 0.5)) }

// fetchError is River's error fetching the jobs to work.
type fetchError struct{ err string }

func (e fetchError) Error() string { return "River cannot fetch its jobs: " + e.err }
