package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/queue"
)

const benchScheduledUsage = `Usage: platform bench scheduled [flags]

Schedules -messages sends through platform api (a child process), all due at
one instant -lead after the benchmark starts, then lets -workers platform
worker processes release and deliver them, and prints: the scheduling rate,
the release latency after send_at (p50, p99, max; a message's created_at is
its release time), the release rate, the exactly-once check (one release,
one counter step, one delivery job and one network message per message), and
what the alternative, a release sweep over every tenant schema, would cost
per tick (docs/design.md, §Scheduled sends).

Flags:
`

// scheduledConfig shapes platform bench scheduled.
type scheduledConfig struct {
	Messages, Tenants, Senders, Recipients int
	Concurrency, Workers, DBMaxConns       int
	Lead, Timeout                          time.Duration
	Database                               string
	// CPUProfile, when set, is the file of a CPU profile of the first
	// worker process from send_at, ProfileFor long.
	CPUProfile string
	ProfileFor time.Duration
}

// scheduledBench is one run of platform bench scheduled.
type scheduledBench struct {
	cfg scheduledConfig
	scratch
	tenants []benchTenant
	stderr  io.Writer
}

func benchScheduled(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := benchFlags("bench scheduled", benchScheduledUsage, stderr)
	var cfg scheduledConfig
	fs.IntVar(&cfg.Messages, "messages", 100000, "scheduled messages, all due at one instant")
	fs.IntVar(&cfg.Tenants, "tenants", 10, "organizations the messages are spread over (round-robin, then over their senders); the sweep figure is measured over these")
	fs.IntVar(&cfg.Senders, "senders", 4, "active sender numbers per organization")
	fs.IntVar(&cfg.Recipients, "recipients", 1000, "recipients on the built-in network")
	fs.IntVar(&cfg.Concurrency, "concurrency", 16, "concurrent clients scheduling")
	fs.IntVar(&cfg.Workers, "workers", 2, "platform worker processes releasing and delivering")
	fs.IntVar(&cfg.DBMaxConns, "db-max-conns", 10, "DB_MAX_CONNS of each child process")
	fs.DurationVar(&cfg.Lead, "lead", 4*time.Minute, "send_at, after the benchmark's start: scheduling must end before it")
	fs.DurationVar(&cfg.Timeout, "timeout", 10*time.Minute, "how long after send_at to wait for every message to be released and delivered")
	keep := scratchFlags(fs, &cfg.Database, "scheduled")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the first worker process from send_at to this file (the worker runs with PPROF_ADDR on a loopback port)")
	fs.DurationVar(&cfg.ProfileFor, "profile-for", 20*time.Second, "length of the -cpuprofile profile")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case cfg.Messages < 1, cfg.Tenants < 1, cfg.Recipients < 1, cfg.Concurrency < 1, cfg.Workers < 1:
		return errors.New("-messages, -tenants, -recipients, -concurrency and -workers must be positive")
	case cfg.Senders < 1 || cfg.Senders > 100:
		return errors.New("-senders must be from 1 to 100")
	case cfg.DBMaxConns < 2:
		return errors.New("-db-max-conns must be at least 2")
	}
	b := &scheduledBench{cfg: cfg, stderr: stderr}
	return b.run(ctx, *keep, stdout)
}

// run builds the fixtures, schedules, waits for the releases and prints
// the figures.
func (b *scheduledBench) run(ctx context.Context, keep bool, stdout io.Writer) error {
	started := time.Now()
	sendAt := started.Add(b.cfg.Lead).Truncate(time.Second)
	closeScratch, err := b.open(ctx, b.cfg.Database, 8, keep)
	if err != nil {
		return err
	}
	defer closeScratch()
	if err := b.fixtures(ctx); err != nil {
		return err
	}
	av, err := startStandIn(ctx, b.d)
	if err != nil {
		return err
	}
	defer func() { _, _ = av.stop() }()

	api, err := startChild(ctx, []string{"api"}, b.childEnv(), true)
	if err != nil {
		return err
	}
	apiRunning := true
	defer func() {
		if apiRunning {
			_ = api.stop()
		}
	}()
	fmt.Fprintf(b.stderr, "scheduling %d messages due at %s\n", b.cfg.Messages, sendAt.UTC().Format(time.RFC3339))
	t0 := time.Now()
	if err := b.schedule(ctx, "http://"+api.addr, sendAt); err != nil {
		return err
	}
	scheduling := time.Since(t0)
	if time.Now().After(sendAt.Add(-2 * time.Second)) {
		return fmt.Errorf("scheduling took %s and outlasted the lead (-lead %s): raise -lead", scheduling.Round(time.Millisecond), b.cfg.Lead)
	}
	// The api process is done: the releases are the workers' alone (a
	// child is stopped once; a second stop would wait for it forever).
	apiRunning = false
	_ = api.stop()
	dueScan, err := b.dueScan(ctx)
	if err != nil {
		return err
	}
	sweep, err := b.sweepCost(ctx)
	if err != nil {
		return err
	}

	workers := make([]*child, 0, b.cfg.Workers)
	var pids []int
	defer func() {
		for _, w := range workers {
			_ = w.stop()
		}
	}()
	pprofAddr := ""
	for i := range b.cfg.Workers {
		env := b.childEnv()
		if i == 0 && b.cfg.CPUProfile != "" {
			if pprofAddr, err = freeAddr(); err != nil {
				return err
			}
			env = append(env, "PPROF_ADDR="+pprofAddr)
		}
		w, err := startChild(ctx, []string{"worker"}, env, false)
		if err != nil {
			return fmt.Errorf("worker %d: %w", i+1, err)
		}
		workers = append(workers, w)
		pids = append(pids, w.cmd.Process.Pid)
	}
	fmt.Fprintf(b.stderr, "scheduled in %s; waiting for send_at (%s) and the releases\n",
		scheduling.Round(time.Millisecond), time.Until(sendAt).Round(time.Second))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(sendAt)):
	}
	var prof <-chan error
	if pprofAddr != "" {
		prof = grabProfile(pprofAddr, max(int(b.cfg.ProfileFor.Seconds()), 1), b.cfg.CPUProfile)
	}
	cpu := b.cpuAt(pids)
	if err := b.waitReleased(ctx, sendAt, &cpu); err != nil {
		return err
	}
	if prof != nil {
		if err := <-prof; err != nil {
			return err
		}
	}
	lat, err := b.latency(ctx)
	if err != nil {
		return err
	}
	once, err := b.exactlyOnce(ctx)
	if err != nil {
		return err
	}
	line := func(name, value string) { fmt.Fprintf(stdout, "%-52s %s\n", name, value) }
	line("benchmark", "result")
	line(fmt.Sprintf("schedule %d messages (%d clients, 1 api process)", b.cfg.Messages, b.cfg.Concurrency),
		fmt.Sprintf("%s, %.0f/s", scheduling.Round(time.Millisecond), float64(b.cfg.Messages)/scheduling.Seconds()))
	line("release latency after send_at", fmt.Sprintf("p50 %.3f s  p99 %.3f s  max %.3f s  (first %.3f s)", lat.p50, lat.p99, lat.max, lat.min))
	line(fmt.Sprintf("release rate (%d worker processes)", b.cfg.Workers),
		fmt.Sprintf("%.0f/s (%d released in %.3f s, first to last)", float64(b.cfg.Messages)/max(lat.max-lat.min, 0.001), b.cfg.Messages, lat.max-lat.min))
	line("exactly once", once.String())
	line("CPU a message, send_at to the last release", cpu.released.String())
	line("CPU a message, send_at to the last delivery", cpu.delivered.String())
	did, err := av.stop()
	if err != nil {
		return err
	}
	if did != "" {
		line("autovacuum", did)
	}
	line(fmt.Sprintf("rescuer's due scan, %d scheduled jobs", b.cfg.Messages), fmt.Sprintf("%.2f ms a scan, per worker process per second", dueScan))
	line(fmt.Sprintf("sweep alternative: a due query per tenant (%d)", b.cfg.Tenants), fmt.Sprintf("%.1f µs a tenant warm, %.1f µs cold (a new connection)", sweep.warm, sweep.cold))
	line("sweep alternative at 10,000 tenants", fmt.Sprintf("%.0f ms a tick warm, %.0f ms cold", sweep.warm*10, sweep.cold*10))
	if !once.ok() {
		return fmt.Errorf("exactly-once check failed: %s", once)
	}
	return nil
}

// childEnv is the child processes' environment.
func (b *scheduledBench) childEnv() []string { return b.env(b.cfg.DBMaxConns, "warn") }

// fixtures creates the organizations, their senders and the recipients.
func (b *scheduledBench) fixtures(ctx context.Context) error {
	f, err := newFixtures(ctx, b.d, b.pepper, fixtureConfig{
		Tenants: b.cfg.Tenants, Senders: b.cfg.Senders, Recipients: b.cfg.Recipients,
		Concurrency: 4, DailyLimit: 100000000,
	}, true)
	if err != nil {
		return err
	}
	b.tenants, err = f.build(ctx, nil)
	if err != nil {
		return err
	}
	_, err = b.d.Pool.Exec(ctx, `UPDATE central.organizations SET sender_rate = 1000000, sender_burst = 1000000,
		api_rate_limit = 1000000, api_rate_burst = 1000000`)
	return err
}

// schedule posts the scheduled sends, round-robin over tenants and senders.
func (b *scheduledBench) schedule(ctx context.Context, base string, sendAt time.Time) error {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: b.cfg.Concurrency}}
	var next atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	at := sendAt.UTC().Format(time.RFC3339)
	for range b.cfg.Concurrency {
		g.Go(func() error {
			for {
				i := int(next.Add(1)) - 1
				if i >= b.cfg.Messages {
					return nil
				}
				t := b.tenants[i%len(b.tenants)]
				body, _ := json.Marshal(map[string]any{
					"sender_number_id": t.Senders[(i/len(b.tenants))%len(t.Senders)],
					"to_phone":         recipientPhone(i % b.cfg.Recipients),
					"type":             "text", "content": "scheduled " + strconv.Itoa(i), "send_at": at,
				})
				req, err := http.NewRequestWithContext(gctx, http.MethodPost, base+"/api/v1/messages", bytes.NewReader(body))
				if err != nil {
					return err
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Api-Key", t.APIKey)
				resp, err := client.Do(req)
				if err != nil {
					return fmt.Errorf("schedule %d: %w", i, err)
				}
				raw, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					return fmt.Errorf("schedule %d = %d %s", i, resp.StatusCode, raw)
				}
			}
		})
	}
	return g.Wait()
}

// dueScan times the Rescuer's due-job statement (queue.Rescuer) over the
// scheduled release jobs, none of them due: what every worker process pays
// each second while they wait.
func (b *scheduledBench) dueScan(ctx context.Context) (float64, error) {
	// The statement's scan, read-only: the rows the Rescuer's UPDATE would
	// look at (none is due yet, so the UPDATE changes none either).
	const runs = 20
	t0 := time.Now()
	for range runs {
		var n int
		if err := b.d.Pool.QueryRow(ctx, `SELECT count(*) FROM river.river_job
			WHERE state IN ('scheduled', 'retryable') AND kind = $1 AND scheduled_at <= now()
			  AND unique_key IS NULL`, queue.ReleaseArgs{}.Kind()).Scan(&n); err != nil {
			return 0, err
		}
	}
	return float64(time.Since(t0).Microseconds()) / runs / 1000, nil
}

// sweepFigures is the cost of a due query per tenant, in microseconds.
type sweepFigures struct{ warm, cold float64 }

// sweepCost times the release sweep's query, one per tenant schema, as a
// sweep would run it each tick: on connections that have seen the tenants
// (warm) and on a new connection (cold: each tenant's catalog entries
// loaded on first use). It first gives each tenant the partial index on
// send_at such a sweep would have (the scratch database's only change to
// the schema), so that the figure is the sweep's floor: one indexed query
// that finds nothing due.
func (b *scheduledBench) sweepCost(ctx context.Context) (sweepFigures, error) {
	var f sweepFigures
	for _, t := range b.tenants {
		if _, err := b.d.Pool.Exec(ctx, `CREATE INDEX IF NOT EXISTS messages_due_idx ON `+
			t.Tenant.Table("messages")+` (send_at) WHERE status = 'scheduled'`); err != nil {
			return f, fmt.Errorf("sweep index: %w", err)
		}
	}
	run := func(c *db.DB) (float64, error) {
		t0 := time.Now()
		for _, t := range b.tenants {
			rows, err := c.Pool.Query(ctx, `SELECT id FROM `+t.Tenant.Table("messages")+`
				WHERE status = 'scheduled' AND send_at <= now() ORDER BY send_at LIMIT 100`)
			if err != nil {
				return 0, err
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return 0, err
			}
		}
		return float64(time.Since(t0).Microseconds()) / float64(len(b.tenants)), nil
	}
	cold, err := db.Open(ctx, db.Config{URL: b.url, MaxConns: 1})
	if err != nil {
		return f, err
	}
	defer cold.Close()
	if f.cold, err = run(cold); err != nil {
		return f, err
	}
	if _, err = run(cold); err != nil {
		return f, err
	}
	if f.warm, err = run(cold); err != nil {
		return f, err
	}
	return f, nil
}

// scheduledCPU is the CPU time the worker processes and their Postgres
// backends used from send_at, per message: up to the moment no message
// was scheduled any more, and up to the moment every one was delivered.
type scheduledCPU struct {
	pids                []int
	start               cpuSnapshot
	n                   int64
	released, delivered cpuSplit
}

// cpuSplit is CPU time a message, in milliseconds: the worker processes'
// and their backends'.
type cpuSplit struct{ workers, backends float64 }

func (c cpuSplit) String() string {
	return fmt.Sprintf("%.3f ms (the workers %.3f, their backends %.3f)", c.workers+c.backends, c.workers, c.backends)
}

// cpuAt starts the CPU reading of the worker processes pids and their
// backends.
func (b *scheduledBench) cpuAt(pids []int) scheduledCPU {
	return scheduledCPU{pids: pids, start: scopeCPU(b.cfg.Database, pids...), n: int64(b.cfg.Messages)}
}

// readCPU is the CPU a message since c.start.
func (b *scheduledBench) readCPU(c *scheduledCPU) cpuSplit {
	now := scopeCPU(b.cfg.Database, c.pids...)
	workers := now.of(c.pids...).since(c.start)
	return cpuSplit{workers: cpuPerMessage(workers, c.n), backends: cpuPerMessage(now.since(c.start)-workers, c.n)}
}

// waitReleased waits until no message is scheduled and every one is
// delivered, or -timeout after send_at, reading cpu at both moments.
func (b *scheduledBench) waitReleased(ctx context.Context, sendAt time.Time, cpu *scheduledCPU) error {
	deadline := sendAt.Add(b.cfg.Timeout)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	// Two counts by status (the status index), the second only once the
	// first is 0: the poll's own backend is among those whose CPU is read.
	count := func(status string) (int, error) {
		n := 0
		for _, t := range b.tenants {
			var c int
			if err := b.d.Pool.QueryRow(ctx, `SELECT count(*) FROM `+t.Tenant.Table("messages")+` WHERE status = $1`,
				status).Scan(&c); err != nil {
				return 0, err
			}
			n += c
		}
		return n, nil
	}
	for {
		scheduled, err := count("scheduled")
		if err != nil {
			return err
		}
		delivered := 0
		if scheduled == 0 {
			if delivered, err = count("delivered"); err != nil {
				return err
			}
		}
		if scheduled == 0 && cpu.released == (cpuSplit{}) {
			cpu.released = b.readCPU(cpu)
		}
		if scheduled == 0 && delivered == b.cfg.Messages {
			cpu.delivered = b.readCPU(cpu)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after -timeout: %d still scheduled, %d of %d delivered", scheduled, delivered, b.cfg.Messages)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// releaseLatency is the release delays after send_at, in seconds.
type releaseLatency struct{ min, p50, p99, max float64 }

// latency reads every message's release delay: created_at (set to the
// release time by the worker, on the real clock) less send_at.
func (b *scheduledBench) latency(ctx context.Context) (releaseLatency, error) {
	var l releaseLatency
	union := ""
	for i, t := range b.tenants {
		if i > 0 {
			union += " UNION ALL "
		}
		union += `SELECT extract(epoch FROM created_at - send_at)::float8 AS d FROM ` + t.Tenant.Table("messages")
	}
	err := b.d.Pool.QueryRow(ctx, `SELECT min(d), percentile_cont(0.5) WITHIN GROUP (ORDER BY d),
		percentile_cont(0.99) WITHIN GROUP (ORDER BY d), max(d) FROM (`+union+`) x`).Scan(&l.min, &l.p50, &l.p99, &l.max)
	return l, err
}

// onceCheck is the exactly-once check's counts.
type onceCheck struct {
	messages, released, early, counted, deliveryJobs, network, networkRows, n int
}

func (c onceCheck) ok() bool {
	return c.messages == c.n && c.released == c.n && c.early == 0 && c.counted == c.n &&
		c.deliveryJobs == c.n && c.network == c.n && c.networkRows == c.n
}

func (c onceCheck) String() string {
	verdict := "ok"
	if !c.ok() {
		verdict = "FAILED"
	}
	return fmt.Sprintf("%s: %d messages, %d released (%d before send_at), %d counted, %d with a delivery job, %d network messages (%d distinct)",
		verdict, c.messages, c.released, c.early, c.counted, c.deliveryJobs, c.networkRows, c.network)
}

// exactlyOnce counts, over every tenant, the messages, those released, the
// accept counters, the delivery jobs and the network's messages.
func (b *scheduledBench) exactlyOnce(ctx context.Context) (onceCheck, error) {
	c := onceCheck{n: b.cfg.Messages}
	for _, t := range b.tenants {
		var m, r, e, u int
		if err := b.d.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status <> 'scheduled'),
			count(*) FILTER (WHERE created_at < send_at),
			(SELECT coalesce(sum(used), 0) FROM `+t.Tenant.Table("daily_usage")+` WHERE side = 'accept')
			FROM `+t.Tenant.Table("messages")).Scan(&m, &r, &e, &u); err != nil {
			return c, err
		}
		c.messages, c.released, c.early, c.counted = c.messages+m, c.released+r, c.early+e, c.counted+u
	}
	// A delivery job may hand its conversation's next message over to a
	// new job (docs/design.md, §Delivery order), so jobs are counted by the
	// messages they name: every released message has one.
	if err := b.d.Pool.QueryRow(ctx, `SELECT count(DISTINCT (args->>'schema', args->>'message_id')) FROM river.river_job
		WHERE kind = $1`, queue.DeliverArgs{}.Kind()).Scan(&c.deliveryJobs); err != nil {
		return c, err
	}
	if err := b.d.Pool.QueryRow(ctx, `SELECT count(DISTINCT reference) FROM network.messages
		WHERE reference LIKE 'tenant_%'`).Scan(&c.network); err != nil {
		return c, err
	}
	err := b.d.Pool.QueryRow(ctx, `SELECT count(*) FROM network.messages WHERE reference LIKE 'tenant_%'`).Scan(&c.networkRows)
	return c, err
}
