package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/queue"
)

// benchRiverNode is platform bench river-node: on a local 3-node Citus
// cluster it starts, it compares the job outbox as the platform runs it
// (a transaction writes the tenant's message and an outbox row on the
// tenant's worker; the mover carries batches into the coordinator's River)
// with River per node (a River schema distributed onto each worker, and a
// transaction writing the tenant's message and its River job on the
// tenant's worker). It probes River's statements on a node schema, measures
// jobs inserted and worked per second and CPU per job of both, stops a
// worker node and sends by both paths, and moves a tenant schema away from
// its node's River (docs/scaling.md, §Jobs).
func benchRiverNode(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("bench river-node", flag.ContinueOnError)
	fs.SetOutput(stderr)
	script := fs.String("citus-script", "scripts/citus-cluster", "the cluster script (scripts/citus-cluster)")
	dur := fs.Duration("duration", 5*time.Second, "how long each path's senders run")
	conc := fs.Int("concurrency", 4, "transactions at once")
	rounds := fs.Int("rounds", 3, "rounds of each path, alternated")
	tenants := fs.Int("tenants", 2, "tenant schemas (spread over the two workers by Citus)")
	moveJobs := fs.Int("move-jobs", 200, "jobs queued in the tenant's node River before its schema moves")
	keep := fs.Bool("keep", false, "keep the cluster (stopped) and print where")
	out := fs.String("out", "", "also write the report as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dur <= 0 || *conc < 1 || *rounds < 1 || *tenants < 2 || *moveJobs < 1 {
		return errors.New("-duration, -concurrency, -rounds and -move-jobs must be positive and -tenants at least 2")
	}
	if err := checkCitusScript(*script); err != nil {
		return err
	}
	cluster, err := startCitus(ctx, *script, stderr)
	if cluster != nil {
		defer func() { err = errors.Join(err, cluster.stop(ctx, *keep)) }()
	}
	rep := &riverNodeReport{Command: "platform bench river-node " + strings.Join(args, " ")}
	if err != nil {
		return finish(stdout, *out, rep, err, printRiverNode)
	}
	url, err := cluster.createdb(ctx, "bizmsg_river_node")
	if err != nil {
		return finish(stdout, *out, rep, err, printRiverNode)
	}
	b := &riverNodeBench{cluster: cluster, url: url, dbName: "bizmsg_river_node", conc: *conc, rounds: *rounds, dur: *dur, moveJobs: *moveJobs, stderr: stderr, rep: rep}
	err = b.run(ctx, *tenants)
	b.close()
	return finish(stdout, *out, rep, err, printRiverNode)
}

// riverNodeBench is one run of bench river-node.
type riverNodeBench struct {
	cluster     *citusCluster
	url, dbName string
	conc        int
	rounds      int
	dur         time.Duration
	moveJobs    int
	stderr      io.Writer
	rep         *riverNodeReport

	d       *db.DB
	tenants []benchTenant
	// nodeOf is each tenant's worker (host:port); schemaOn the River
	// schema distributed onto each worker.
	nodeOf   map[string]string
	schemaOn map[string]string
	logs     *riverLog
	swept    atomic.Int64
}

// riverNodeReport is what bench river-node prints.
type riverNodeReport struct {
	Command string `json:"command"`
	// Setup is how the node schemas were made: each way tried, and its
	// error if it failed.
	Setup []probeStep `json:"setup"`
	// Probe is River's statements on a node schema, through the
	// coordinator.
	Probe []probeStep `json:"probe"`
	// Outbox and PerNode are the two paths' figures.
	Outbox  *pathFigures `json:"outbox,omitempty"`
	PerNode *pathFigures `json:"per_node,omitempty"`
	// OutboxSweeps is how often the wait for the outbox's moves found rows
	// still there after 5 s and swept them (woke their mover again).
	OutboxSweeps int64 `json:"outbox_sweeps"`
	// Down is a worker node stopped, and started again.
	Down *downFigures `json:"down,omitempty"`
	// Move is a tenant schema moved away from its node's River.
	Move *moveFigures `json:"move,omitempty"`
	// RiverErrors is what River's clients logged at warning or error
	// level (its maintenance services, the elector, the producers), once
	// per message and error.
	RiverErrors []string `json:"river_errors"`
}

// probeStep is one thing tried: its name, and its error ("" when it
// worked) with a detail.
type probeStep struct {
	Step   string `json:"step"`
	Err    string `json:"error,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// roundFigures is one round of one path: transactions committed, each
// one message and one job; how fast, and the CPU of the bench process
// (senders, mover, River clients) and of every node's backends of the
// database, per job, until every job was in River.
type roundFigures struct {
	Jobs int64 `json:"jobs"`
	// InsertRate is transactions committed per second; InRiverRate jobs
	// per second from the first send until every job was in River (the
	// outbox: moved).
	InsertRate  float64 `json:"insert_rate"`
	InRiverRate float64 `json:"in_river_rate"`
	InsertCPU   float64 `json:"insert_cpu_ms"`
	// TwoPhase is pg_dist_transaction records the sends left: 0 when every
	// transaction committed in one phase.
	TwoPhase int64  `json:"two_phase"`
	Errors   int64  `json:"errors"`
	FirstErr string `json:"first_error,omitempty"`
}

// pathFigures is one path's rounds, their medians, and its jobs worked.
type pathFigures struct {
	Rounds []roundFigures `json:"rounds"`
	// Median is each figure's median over the rounds (Jobs, TwoPhase and
	// Errors: their sums).
	Median roundFigures `json:"median"`
	// WorkRate is jobs completed per second by the path's River clients
	// (a no-op worker), WorkCPU ms of CPU per job worked.
	WorkRate float64 `json:"work_rate"`
	WorkCPU  float64 `json:"work_cpu_ms"`
	// WorkErr is why no job could be worked, if so.
	WorkErr string `json:"work_error,omitempty"`
}

// add adds round r and computes the medians again.
func (p *pathFigures) add(r roundFigures) {
	p.Rounds = append(p.Rounds, r)
	med := func(f func(roundFigures) float64) float64 {
		v := make([]float64, len(p.Rounds))
		for i, r := range p.Rounds {
			v[i] = f(r)
		}
		slices.Sort(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	m := roundFigures{
		InsertRate:  med(func(r roundFigures) float64 { return r.InsertRate }),
		InRiverRate: med(func(r roundFigures) float64 { return r.InRiverRate }),
		InsertCPU:   roundMS(med(func(r roundFigures) float64 { return r.InsertCPU })),
	}
	for _, r := range p.Rounds {
		m.Jobs += r.Jobs
		m.TwoPhase += r.TwoPhase
		m.Errors += r.Errors
		if m.FirstErr == "" {
			m.FirstErr = r.FirstErr
		}
	}
	p.Median = m
}

// moveFigures is bench river-node's tenant schema move.
type moveFigures struct {
	Schema string        `json:"schema"`
	From   string        `json:"from"`
	To     string        `json:"to"`
	Took   time.Duration `json:"took_ns"`
	// Queued is the jobs queued in the old node's River before the move;
	// Stranded those still there, on the old node, after it.
	Queued   int64 `json:"queued"`
	Stranded int64 `json:"stranded"`
	// During is sends (message and job into the old node's River) while
	// the move ran: committed, failed, and the slowest.
	DuringOK  int64         `json:"during_ok"`
	DuringErr int64         `json:"during_errors"`
	DuringMax time.Duration `json:"during_max_ns"`
	FirstErr  string        `json:"first_error,omitempty"`
	// OldTwoPhase and NewTwoPhase are pg_dist_transaction records of one
	// send after the move into the old node's River and into the new
	// node's: a send whose job stays in the old River spans two nodes.
	OldTwoPhase int64 `json:"old_two_phase"`
	NewTwoPhase int64 `json:"new_two_phase"`
}

func (b *riverNodeBench) close() {
	if b.d != nil {
		b.d.Close()
	}
}

// run sets the cluster up and runs the probe, both paths and the move.
func (b *riverNodeBench) run(ctx context.Context, tenants int) error {
	var err error
	if b.d, err = db.Open(ctx, db.Config{URL: b.url, MaxConns: int32(b.conc) + 8}); err != nil {
		return err
	}
	// Two-phase commit records stay, so that the bench counts them.
	if _, err := b.d.Pool.Exec(ctx, "ALTER SYSTEM SET citus.recover_2pc_interval = -1"); err != nil {
		return fmt.Errorf("keep 2PC records: %w", err)
	}
	if _, err := b.d.Pool.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	fmt.Fprintln(b.stderr, "river-node: migrating and provisioning tenants")
	f, err := newFixtures(ctx, b.d, strings.Repeat("river-node ", 4), fixtureConfig{Tenants: tenants, Senders: 1, Recipients: 1, Concurrency: 2, DailyLimit: 1 << 30}, true)
	if err != nil {
		return err
	}
	if b.tenants, err = f.build(ctx, nil); err != nil {
		return err
	}
	if b.nodeOf, err = b.schemaNodes(ctx); err != nil {
		return err
	}
	b.logs = &riverLog{}
	defer func() { b.rep.RiverErrors = b.logs.lines() }()
	fmt.Fprintln(b.stderr, "river-node: a River schema on each worker")
	if err := b.nodeSchemas(ctx); err != nil {
		return err
	}
	fmt.Fprintln(b.stderr, "river-node: probing River on a node schema")
	if err := b.probe(ctx); err != nil {
		return err
	}
	if err := b.paths(ctx); err != nil {
		return err
	}
	fmt.Fprintln(b.stderr, "river-node: moving a tenant schema")
	if b.rep.Move, err = b.move(ctx); err != nil {
		return err
	}
	return nil
}

// schemaNodes is the worker (host:port) of every schema distributed on
// the cluster, tenants' and node Rivers' alike.
func (b *riverNodeBench) schemaNodes(ctx context.Context) (map[string]string, error) {
	rows, err := b.d.Pool.Query(ctx, `SELECT DISTINCT s.schemaid::regnamespace::text, n.nodename || ':' || n.nodeport
		FROM pg_dist_schema s
		JOIN pg_dist_partition p ON p.colocationid = s.colocationid
		JOIN pg_dist_shard sh ON sh.logicalrelid = p.logicalrelid
		JOIN pg_dist_placement pl ON pl.shardid = sh.shardid
		JOIN pg_dist_node n ON n.groupid = pl.groupid`)
	if err != nil {
		return nil, fmt.Errorf("schema placements: %w", err)
	}
	out := map[string]string{}
	for rows.Next() {
		var s, n string
		if err := rows.Scan(&s, &n); err != nil {
			return nil, fmt.Errorf("schema placements: %w", err)
		}
		out[s] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("schema placements: %w", err)
	}
	return out, nil
}

// workers is the cluster's worker nodes, host:port, in order.
func (b *riverNodeBench) workers(ctx context.Context) ([]string, error) {
	rows, err := b.d.Pool.Query(ctx, `SELECT nodename || ':' || nodeport FROM pg_dist_node WHERE groupid <> 0 AND noderole = 'primary' ORDER BY nodeid`)
	if err != nil {
		return nil, fmt.Errorf("workers: %w", err)
	}
	ws, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("workers: %w", err)
	}
	return ws, nil
}

// nodeSchemas makes a River schema on each worker: first as the task
// states it (created a distributed schema with schema-based sharding on,
// then River's migrations), and when that fails, as the tenant schemas
// are made (a regular schema migrated, then citus_schema_distribute); then
// moves each onto its worker when Citus put it elsewhere.
func (b *riverNodeBench) nodeSchemas(ctx context.Context) error {
	ws, err := b.workers(ctx)
	if err != nil {
		return err
	}
	b.schemaOn = map[string]string{}
	for i, w := range ws {
		s := fmt.Sprintf("river_node%d", i+1)
		step := probeStep{Step: s + ": CREATE SCHEMA with citus.enable_schema_based_sharding on, then River's migrations"}
		err := b.migrateNode(ctx, s, true)
		if err != nil {
			step.Err = err.Error()
			if _, derr := b.d.Pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{s}.Sanitize()+" CASCADE"); derr != nil {
				return fmt.Errorf("drop %s: %w", s, derr)
			}
			b.rep.Setup = append(b.rep.Setup, step)
			step = probeStep{Step: s + ": a regular schema, River's migrations, then citus_schema_distribute"}
			err = b.migrateNode(ctx, s, false)
			if err == nil {
				_, err = b.d.Pool.Exec(ctx, "SELECT citus_schema_distribute($1)", s)
			}
		}
		if err != nil {
			step.Err = err.Error()
			b.rep.Setup = append(b.rep.Setup, step)
			return fmt.Errorf("no River schema on %s: %w", w, err)
		}
		nodes, err := b.schemaNodes(ctx)
		if err != nil {
			return err
		}
		step.Detail = "placed on " + nodes[s]
		if nodes[s] != w {
			host, port, _ := strings.Cut(w, ":")
			// River's river_leader is UNLOGGED: logical replication
			// (mode auto, the tenant schemas' move) cannot publish it.
			mode := "auto"
			t0 := time.Now()
			_, err := b.d.Pool.Exec(ctx, "SELECT citus_schema_move($1, $2, $3::int, shard_transfer_mode => 'auto')", s, host, port)
			if err != nil {
				b.rep.Setup = append(b.rep.Setup, probeStep{Step: s + ": citus_schema_move, shard_transfer_mode auto", Err: err.Error()})
				mode, t0 = "block_writes", time.Now()
				_, err = b.d.Pool.Exec(ctx, "SELECT citus_schema_move($1, $2, $3::int, shard_transfer_mode => 'block_writes')", s, host, port)
			}
			if err != nil {
				step.Err = "citus_schema_move: " + err.Error()
				b.rep.Setup = append(b.rep.Setup, step)
				return fmt.Errorf("move %s to %s: %w", s, w, err)
			}
			step.Detail += fmt.Sprintf(", moved to %s (%s) in %s", w, mode, time.Since(t0).Round(time.Millisecond))
		}
		var listed bool
		if err := b.d.Pool.QueryRow(ctx, "SELECT EXISTS (SELECT FROM citus_schemas WHERE schema_name = $1::regnamespace)", s).Scan(&listed); err != nil {
			return fmt.Errorf("citus_schemas: %w", err)
		}
		step.Detail += fmt.Sprintf("; in citus_schemas: %v", listed)
		b.rep.Setup = append(b.rep.Setup, step)
		b.schemaOn[w] = s
	}
	return nil
}

// migrateNode creates schema s (distributed at once when sharded) and
// runs River's migrations into it.
func (b *riverNodeBench) migrateNode(ctx context.Context, s string, sharded bool) error {
	err := pgx.BeginFunc(ctx, b.d.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL citus.enable_schema_based_sharding = %v", sharded)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{s}.Sanitize())
		return err
	})
	if err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	m, err := rivermigrate.New(riverpgxv5.New(b.d.Pool), &rivermigrate.Config{Schema: s, Logger: quietLogger()})
	if err != nil {
		return fmt.Errorf("river migrator: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river migrate: %w", err)
	}
	return nil
}

// riverClient is a River client on schema s of pool: one that works the
// delivery queue with a no-op worker when work, else one that inserts.
func (b *riverNodeBench) riverClient(pool *pgxpool.Pool, s string, work bool) (*river.Client[pgx.Tx], error) {
	cfg := &river.Config{Schema: s, Logger: slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if work {
		workers := river.NewWorkers()
		if err := river.AddWorkerSafely(workers, &noopDelivery{}); err != nil {
			return nil, fmt.Errorf("worker: %w", err)
		}
		cfg.Workers = workers
		cfg.Queues = map[string]river.QueueConfig{queue.QueueDelivery: {MaxWorkers: 50}}
	}
	c, err := river.NewClient(riverpgxv5.New(pool), cfg)
	if err != nil {
		return nil, fmt.Errorf("river client on %s: %w", s, err)
	}
	return c, nil
}

// noopDelivery completes delivery jobs without doing anything: the bench
// measures River's fetch and completion, not a delivery.
type noopDelivery struct {
	river.WorkerDefaults[queue.DeliverArgs]
}

// Work completes the job.
func (*noopDelivery) Work(context.Context, *river.Job[queue.DeliverArgs]) error { return nil }

// riverLog collects River's log lines, once per message and error, and
// when each was last logged.
type riverLog struct {
	mu   sync.Mutex
	seq  int
	last map[string]int
	errs map[string]string
	all  []string
}

// Write takes slog's text lines.
func (l *riverLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last, l.errs = map[string]int{}, map[string]string{}
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(p)), "\n") {
		_, rest, _ := strings.Cut(line, " level=")
		msg, err := quoted(rest, "msg="), quoted(rest, "err=")
		key := msg + "\x00" + err
		l.seq++
		if _, ok := l.last[key]; !ok {
			l.all = append(l.all, rest)
			l.errs[key] = err
		}
		l.last[key] = l.seq
	}
	return len(p), nil
}

// quoted is the value of key in a slog text line.
func quoted(line, key string) string {
	_, v, ok := strings.Cut(line, key)
	if !ok {
		return ""
	}
	if q, err := strconv.QuotedPrefix(v); err == nil {
		u, _ := strconv.Unquote(q)
		return u
	}
	v, _, _ = strings.Cut(v, " ")
	return v
}

// lines is every distinct line so far.
func (l *riverLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.all)
}

// mark is how many lines were logged so far, for errOf.
func (l *riverLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// errOf is the err of a line logged after mark whose msg holds msg, ""
// when none.
func (l *riverLog) errOf(msg string, mark int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for key, seq := range l.last {
		if m, _, _ := strings.Cut(key, "\x00"); seq > mark && strings.Contains(m, msg) {
			return l.errs[key]
		}
	}
	return ""
}

// count is one integer a query returns.
func (b *riverNodeBench) count(ctx context.Context, sql string, args ...any) (int64, error) {
	var n int64
	if err := b.d.Pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("%s: %w", strings.Join(strings.Fields(sql)[:min(6, len(strings.Fields(sql)))], " "), err)
	}
	return n, nil
}

// waitFor polls cond every 20 ms until it holds, it fails, or within
// passes.
func waitFor(ctx context.Context, within time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %s", within)
		case <-tick.C:
		}
	}
}

// printRiverNode prints the report.
func printRiverNode(w io.Writer, r *riverNodeReport) {
	fmt.Fprintln(w, r.Command)
	fmt.Fprintln(w, "== node River schemas")
	printSteps(w, r.Setup)
	fmt.Fprintln(w, "== River's statements on a node schema, through the coordinator")
	printSteps(w, r.Probe)
	if r.Outbox != nil || r.PerNode != nil {
		fmt.Fprintln(w, "== one message and its job per transaction (CPU: the bench process and every node's backends, ms per job)")
		fmt.Fprintf(w, "%-22s %8s %10s %11s %9s %6s %6s\n", "path, round", "jobs", "sends/s", "in River/s", "CPU ms", "2PC", "errors")
		for _, p := range []struct {
			name string
			f    *pathFigures
		}{{"outbox", r.Outbox}, {"River per node", r.PerNode}} {
			if p.f == nil {
				continue
			}
			row := func(label string, f roundFigures) {
				fmt.Fprintf(w, "%-22s %8d %10.0f %11.0f %9.2f %6d %6d\n", label, f.Jobs, f.InsertRate, f.InRiverRate, f.InsertCPU, f.TwoPhase, f.Errors)
			}
			for i, f := range p.f.Rounds {
				row(fmt.Sprintf("%s %d", p.name, i+1), f)
			}
			row(p.name+" median", p.f.Median)
			if p.f.Median.FirstErr != "" {
				fmt.Fprintf(w, "  first error: %s\n", p.f.Median.FirstErr)
			}
		}
		fmt.Fprintf(w, "(median row: jobs, 2PC and errors summed over the rounds; outbox rows still there after 5 s, swept: %d)\n", r.OutboxSweeps)
		fmt.Fprintln(w, "== the jobs worked (a no-op worker: River's fetch and completion)")
		for _, p := range []struct {
			name string
			f    *pathFigures
		}{{"outbox (coordinator's River)", r.Outbox}, {"River per node", r.PerNode}} {
			switch {
			case p.f == nil:
			case p.f.WorkErr != "":
				fmt.Fprintf(w, "%-30s none: %s\n", p.name, p.f.WorkErr)
			default:
				fmt.Fprintf(w, "%-30s %.0f jobs/s, %.2f ms CPU a job\n", p.name, p.f.WorkRate, p.f.WorkCPU)
			}
		}
	}
	if d := r.Down; d != nil {
		fmt.Fprintf(w, "== a worker node down (%s, stopped as a crash does), one send each\n", d.Node)
		fmt.Fprintf(w, "tenant on the worker up:   outbox %s (in River: %v); River per node %s\n", d.OutboxUp, d.OutboxUpInRiver, d.PerNodeUp)
		fmt.Fprintf(w, "tenant on the worker down: outbox %s; River per node %s\n", d.OutboxDown, d.PerNodeDown)
		fmt.Fprintf(w, "its tenant sent again %s after the worker's start\n", d.Back.Round(time.Millisecond))
	}
	if m := r.Move; m != nil {
		fmt.Fprintln(w, "== a tenant schema moved away from its node's River")
		fmt.Fprintf(w, "%s from %s to %s in %s\n", m.Schema, m.From, m.To, m.Took.Round(time.Millisecond))
		fmt.Fprintf(w, "jobs queued in the old node's River before: %d; still there after: %d\n", m.Queued, m.Stranded)
		fmt.Fprintf(w, "sends during the move (message + job into the old node's River): %d committed, %d failed, slowest %s\n",
			m.DuringOK, m.DuringErr, m.DuringMax.Round(time.Millisecond))
		if m.FirstErr != "" {
			fmt.Fprintf(w, "  first error: %s\n", m.FirstErr)
		}
		fmt.Fprintf(w, "2PC records of one send after the move: job into the old node's River %d, into the new node's %d\n", m.OldTwoPhase, m.NewTwoPhase)
	}
	if len(r.RiverErrors) > 0 {
		fmt.Fprintln(w, "== River's warnings and errors (its clients on every River schema, once each)")
		for _, l := range r.RiverErrors {
			fmt.Fprintln(w, "  "+l)
		}
	}
}
