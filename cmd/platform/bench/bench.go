// Package bench is platform bench: the benchmarks that measure the platform
// on this machine (docs/performance.md). The service it measures runs as a
// child process of the same binary (platform serve, api, worker, and
// platform bench bare-gin for the bare gin ceiling), so the binary's main
// must dispatch "bench" to Main.
package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"sort"
	"strings"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/cmd/platform/internal/term"
	"github.com/bizmsg/platform/migrations"
	"github.com/bizmsg/platform/platform/config"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/migrate"
)

const benchUsage = `Usage: platform bench <benchmark> [flags]

Benchmarks (each prints its figures; run with -h for its flags):
  tenants   provision N tenant schemas one by one, then migrate all of them
            again (a no-op), and print the timings
  send      drive POST /api/v1/messages on the service (a child process)
            over loopback HTTP, measure acceptance, delivery, /me, peak RSS
            and the tenant sweep beside this machine's ceilings (raw
            Postgres, River alone, bare gin), and print the ratios
  scheduled schedule N messages due at one instant through platform api,
            release them with platform worker processes, and print the
            scheduling rate, release latency and rate, the exactly-once
            check, and the cost of a per-tenant release sweep instead
  river-node on a 3-node Citus cluster it starts, River per worker node
            (a River schema distributed onto each worker) beside the job
            outbox: River's statements on a node schema, jobs inserted and
            worked per second and CPU per job of both, a worker stopped, a
            tenant schema moved
  campaign  run one campaign on the service (a child process): recipients
            added per second, release and delivery against the sender
            pool's throttle, the memory of the service and of Postgres
            over the campaign, exactly once
`

// Main runs platform bench with args (the words after "bench"): it prints
// the figures on stdout and the usage, flag errors and progress on stderr.
// It returns flag.ErrHelp when it printed the usage for want of a benchmark,
// or for -h on one.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, benchUsage)
		return flag.ErrHelp
	}
	switch args[0] {
	case "tenants":
		return benchTenants(ctx, args[1:], stdout, stderr)
	case "send":
		return benchSend(ctx, args[1:], stdout, stderr)
	case "scheduled":
		return benchScheduled(ctx, args[1:], stdout, stderr)
	case "campaign":
		return benchCampaign(ctx, args[1:], stdout, stderr)
	case "river-node":
		return benchRiverNode(ctx, args[1:], stdout, stderr)
	case "bare-gin":
		// Ceiling (c) of bench send, run by it as a child process.
		fs := flag.NewFlagSet("bench bare-gin", flag.ContinueOnError)
		fs.SetOutput(stderr)
		addr := fs.String("addr", "127.0.0.1:8089", "loopback address to serve on")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return bareGin(ctx, *addr)
	default:
		fmt.Fprint(stderr, benchUsage)
		return fmt.Errorf("unknown benchmark %q", args[0])
	}
}

// benchTenants measures tenant provisioning and the no-op migration of every
// tenant, in a scratch database that it creates (and drops unless -keep).
func benchTenants(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench tenants", flag.ContinueOnError)
	fs.SetOutput(stderr)
	count := fs.Int("count", 1000, "tenant schemas to provision")
	concurrency := fs.Int("concurrency", 4, "tenant schemas migrated at once by the no-op pass (as platform migrate)")
	provisioners := fs.Int("provision-concurrency", 1, "tenants provisioned at once (1: one after the other, each one's time alone; more fills a large -count sooner, each one's time then includes the others')")
	var dbName string
	keep := scratchFlags(fs, &dbName, "tenants")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *count < 1 {
		return fmt.Errorf("-count must be at least 1")
	}
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return err
	}
	scratch, err := scratchDatabase(ctx, cfg.DatabaseURL, dbName)
	if err != nil {
		return err
	}
	if !*keep {
		defer func() { _ = dropDatabase(context.WithoutCancel(ctx), cfg.DatabaseURL, dbName) }()
	}
	d, err := db.Open(ctx, db.Config{URL: scratch, MaxConns: int32(max(*concurrency, *provisioners)) + 2})
	if err != nil {
		return err
	}
	defer d.Close()
	m, err := migrate.New(migrate.Config{Pool: d.Pool, Concurrency: *concurrency, Logger: quietLogger()})
	if err != nil {
		return err
	}
	if _, err := m.Base(ctx); err != nil {
		return err
	}

	tty := term.IsTerminal(stderr)
	start := time.Now()
	durations, err := provisionTenants(ctx, d, m, *count, max(*provisioners, 1), func(done int) {
		if tty && (done%50 == 0 || done == *count) {
			fmt.Fprintf(stderr, "\rprovisioned %d/%d", done, *count)
		} else if !tty && (done == *count || done%max(*count/10, 1) == 0) {
			fmt.Fprintf(stderr, "bench: provisioned %d/%d tenants\n", done, *count)
		}
	})
	if err != nil {
		return err
	}
	if tty {
		fmt.Fprintln(stderr)
	}
	provisionTotal := time.Since(start)
	sum, err := m.AllTenants(ctx, nil)
	if err != nil {
		return err
	}
	if err := sum.Err(); err != nil {
		return err
	}
	t0 := time.Now()
	budget, err := db.ReadFileBudget(ctx, d.Pool)
	if err != nil {
		return err
	}
	budgetTook := time.Since(t0)
	change, err := migrateChange(ctx, d, *concurrency, stderr, tty)
	if err != nil {
		return err
	}
	sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
	pct := func(p float64) time.Duration { return durations[int(p*float64(len(durations)-1))] }
	fmt.Fprintf(stdout, "%-44s %s\n", "benchmark", "result")
	fmt.Fprintf(stdout, "%-44s %s\n", strings.Repeat("-", 44), strings.Repeat("-", 40))
	fmt.Fprintf(stdout, "%-44s %d in %s\n", fmt.Sprintf("tenants provisioned (%d at once)", max(*provisioners, 1)), *count, provisionTotal.Round(time.Millisecond))
	fmt.Fprintf(stdout, "%-44s p50 %s  p99 %s  max %s\n", "provision one tenant", pct(0.5).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond), durations[len(durations)-1].Round(10*time.Microsecond))
	fmt.Fprintf(stdout, "%-44s %s (%d current, %d migrated)\n", fmt.Sprintf("migrate %d current tenants (concurrency %d)", sum.Total, *concurrency), sum.Duration.Round(time.Millisecond), sum.Current, sum.Updated)
	fmt.Fprintf(stdout, "%-44s %s (%d tenants, %d relations each; max_files_per_process %d)\n", "start-up check of server settings", budgetTook.Round(10*time.Microsecond), budget.Tenants, budget.RelationsPerTenant, budget.MaxFilesPerProcess)
	fmt.Fprintf(stdout, "%-44s %s (%d migrated, %d failed; goal at 10,000 tenants <= 5m)\n", fmt.Sprintf("migrate %d tenants: a column and an index", change.Total), change.Duration.Round(time.Millisecond), change.Updated, len(change.Failed))
	return nil
}

// benchMigration is the migration benchTenants times over every tenant
// schema: one new column of messages and an index on it (empty tables: the
// schema changes' own cost, not an index build over rows).
const benchMigration = `ALTER TABLE messages ADD COLUMN bench_note text;
CREATE INDEX messages_bench_note_idx ON messages (bench_note);
`

// migrateChange migrates every tenant schema of d to the platform's tenant
// set plus benchMigration, with concurrency schemas at once (as platform
// migrate does), showing progress on stderr (a bar on a terminal, else a
// line each tenth), and returns the summary.
func migrateChange(ctx context.Context, d *db.DB, concurrency int, stderr io.Writer, tty bool) (migrate.Summary, error) {
	set := fstest.MapFS{}
	tenantSet := migrations.Tenant()
	entries, err := fs.ReadDir(tenantSet, ".")
	if err != nil {
		return migrate.Summary{}, err
	}
	for _, e := range entries {
		b, err := fs.ReadFile(tenantSet, e.Name())
		if err != nil {
			return migrate.Summary{}, err
		}
		set[e.Name()] = &fstest.MapFile{Data: b}
	}
	set["9000_bench_column.sql"] = &fstest.MapFile{Data: []byte(benchMigration)}
	m, err := migrate.New(migrate.Config{Pool: d.Pool, Concurrency: concurrency, Logger: quietLogger(), Tenant: set})
	if err != nil {
		return migrate.Summary{}, err
	}
	progress := migrate.ProgressBar(stderr)
	if !tty {
		progress = func(done, total int) {
			if done == total || done%max(total/10, 1) == 0 {
				fmt.Fprintf(stderr, "bench: migrated %d/%d tenant schemas\n", done, total)
			}
		}
	}
	sum, err := m.AllTenants(ctx, progress)
	if err != nil {
		return sum, err
	}
	return sum, sum.Err()
}

// quietLogger discards logs below warn (for commands whose output is a report).
func quietLogger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// scratchDatabase (re)creates database name on the server of baseURL and
// returns its URL.
func scratchDatabase(ctx context.Context, baseURL, name string) (string, error) {
	if err := dropDatabase(ctx, baseURL, name); err != nil {
		return "", err
	}
	u, err := url.Parse(baseURL)
	if err != nil {
		return "", fmt.Errorf("parse database url: %w", err)
	}
	u.Path = "/" + name
	if err := db.EnsureDatabase(ctx, u.String()); err != nil {
		return "", err
	}
	return u.String(), nil
}

func dropDatabase(ctx context.Context, baseURL, name string) error {
	u, err := url.Parse(baseURL)
	if err != nil {
		return fmt.Errorf("parse database url: %w", err)
	}
	u.Path = "/postgres"
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return fmt.Errorf("connect to maintenance database: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop %s: %w", name, err)
	}
	return nil
}
