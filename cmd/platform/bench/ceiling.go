package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/bizmsg/platform/platform/queue"
)

// ceilingQueue holds the raw-Postgres ceiling's jobs; nothing works it, and
// the jobs are deleted afterwards.
const ceilingQueue = "bench_ceiling"

// ceilingArgs is the job the raw-Postgres ceiling inserts: the same shape as
// a delivery job.
type ceilingArgs struct {
	OrgID     int64  `json:"org_id"`
	Schema    string `json:"schema"`
	MessageID int64  `json:"message_id"`
}

func (ceilingArgs) Kind() string { return "bench_ceiling" }

func (ceilingArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: ceilingQueue, MaxAttempts: queue.DefaultDeliveryMaxAttempts}
}

// noopArgs is the River-alone ceiling's job: worked by a worker that does
// nothing, on the delivery queue with the service's delivery settings.
type noopArgs struct {
	N int `json:"n"`
}

func (noopArgs) Kind() string { return "bench_noop" }

func (noopArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queue.QueueDelivery, MaxAttempts: queue.DefaultDeliveryMaxAttempts}
}

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

// ceilingPostgres is ceiling (a): what Postgres alone accepts with the same
// concurrency and pool size as the service, with no HTTP, auth or checks: c
// workers for dur (or until stop says so), each committing transactions of
// one message row (the service's columns, in a tenant table, spread over
// tenants and senders) and its River job, inserted with River's own InsertTx
// on the pgx transaction. pool is ceilingPool's: every tenant's insert is a
// prepared statement on every connection once it has run there.
func ceilingPostgres(ctx context.Context, pool *pgxpool.Pool, tenants []benchTenant, c int, dur time.Duration, progress func(int64), stop func(int64) bool) (loadResult, error) {
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: migrate.RiverSchema})
	if err != nil {
		return loadResult{}, fmt.Errorf("river client: %w", err)
	}
	res, err := closedLoop(ctx, c, dur, progress, stop, func(_ context.Context, i int64) (bool, string, error) {
		bt := tenants[int(i)%len(tenants)]
		sender := bt.Senders[int(i/int64(len(tenants)))%len(bt.Senders)]
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var id int64
			now := time.Now()
			if err := tx.QueryRow(ctx, `INSERT INTO `+bt.Tenant.Table("messages")+`
				(sender_number_id, to_phone, recipient_user_id, type, content, status, client_reference, created_at, updated_at)
				VALUES ($1, $2, $3, 'text', $4, 'queued', 'bench-ceiling', $5, $5) RETURNING id`,
				sender, recipientPhone(0), int64(1), "Hello from the benchmark", now).Scan(&id); err != nil {
				return err
			}
			_, err := client.InsertTx(ctx, tx, ceilingArgs{OrgID: bt.Tenant.OrgID, Schema: bt.Tenant.Schema, MessageID: id}, nil)
			return err
		})
		if err != nil {
			return false, err.Error(), nil //nolint:nilerr // a failed transaction is a counted error, not the end of the run
		}
		return true, "", nil
	})
	if err != nil {
		return res, err
	}
	if res.Errors > 0 {
		return res, fmt.Errorf("raw postgres ceiling: %d transactions failed, the first: %s", res.Errors, res.FirstError)
	}
	return res, nil
}

// cleanCeiling deletes what ceilingPostgres wrote to tenants, leaving the
// tables as the service will find them.
func cleanCeiling(ctx context.Context, pool *pgxpool.Pool, tenants []benchTenant) error {
	if _, err := pool.Exec(ctx, `DELETE FROM river.river_job WHERE queue = $1`, ceilingQueue); err != nil {
		return fmt.Errorf("clean ceiling jobs: %w", err)
	}
	for _, bt := range tenants {
		if _, err := pool.Exec(ctx, `DELETE FROM `+bt.Tenant.Table("messages")+` WHERE client_reference = 'bench-ceiling'`); err != nil {
			return fmt.Errorf("clean ceiling messages: %w", err)
		}
	}
	return nil
}

// vacuumTenants vacuums what cleanCeiling deleted from: the tenants'
// messages and River's jobs.
func vacuumTenants(ctx context.Context, pool *pgxpool.Pool, tenants []benchTenant) error {
	tables := make([]string, 0, len(tenants)+1)
	for _, bt := range tenants {
		tables = append(tables, bt.Tenant.Table("messages"))
	}
	tables = append(tables, "river.river_job")
	if _, err := pool.Exec(ctx, "VACUUM "+strings.Join(tables, ", ")); err != nil {
		return fmt.Errorf("vacuum after ceiling (a): %w", err)
	}
	return nil
}

// walStats is where the server's WAL is, cluster-wide: Bytes is the insert
// position (pg_current_wal_lsn, exact at once); FPI counts full-page images
// as pg_stat_wal has them, which backends report at most once a second
// (an idle one within 10 s), so a short run's figure is approximate.
type walStats struct {
	FPI   int64
	Bytes int64
}

func readWAL(ctx context.Context, pool *pgxpool.Pool) (walStats, error) {
	var w walStats
	err := pool.QueryRow(ctx, `SELECT wal_fpi, (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint FROM pg_stat_wal`).Scan(&w.FPI, &w.Bytes)
	if err != nil {
		return w, fmt.Errorf("read pg_stat_wal: %w", err)
	}
	return w, nil
}

// walPerTx is the WAL written per transaction between two readings.
type walPerTx struct {
	Bytes float64 `json:"bytes"`
	FPI   float64 `json:"full_page_images"`
}

func perTx(before, after walStats, txs int64) walPerTx {
	if txs <= 0 {
		return walPerTx{}
	}
	return walPerTx{Bytes: float64(after.Bytes-before.Bytes) / float64(txs), FPI: float64(after.FPI-before.FPI) / float64(txs)}
}

// ceilingRun is ceilingPostgres with the WAL it wrote per transaction.
func ceilingRun(ctx context.Context, pool *pgxpool.Pool, tenants []benchTenant, c int, dur time.Duration, progress func(int64)) (loadResult, walPerTx, error) {
	before, err := readWAL(ctx, pool)
	if err != nil {
		return loadResult{}, walPerTx{}, err
	}
	res, err := ceilingPostgres(ctx, pool, tenants, c, dur, progress, nil)
	if err != nil {
		return res, walPerTx{}, err
	}
	after, err := readWAL(ctx, pool)
	if err != nil {
		return res, walPerTx{}, err
	}
	return res, perTx(before, after, res.OK), cleanCeiling(ctx, pool, tenants)
}

// ceilingPool opens ceiling (a)'s pool: size conns, like the service's, on
// url, with a statement cache large enough for every tenant's insert text
// (pgx's default holds 512 per connection; past that, each insert of a
// sweep over 1,000 tenants would prepare its statement again). The ceiling
// is the best raw Postgres does: each statement parsed and planned once per
// connection, which a service cannot afford over every tenant forever (see
// docs/performance.md, §Prepared statements).
func ceilingPool(ctx context.Context, url string, conns, tenants int) (*pgxpool.Pool, error) {
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	pcfg.MaxConns = int32(conns)
	pcfg.ConnConfig.StatementCacheCapacity = max(pcfg.ConnConfig.StatementCacheCapacity, 2*tenants+64)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("ceiling pool: %w", err)
	}
	return pool, nil
}

// drainResult is how fast a backlog of n jobs (or deliveries) was worked.
type drainResult struct {
	Jobs int64 `json:"jobs"`
	// Elapsed is from the first job finished to the last.
	Elapsed time.Duration `json:"elapsed_ns"`
	Rate    float64       `json:"rate"`
}

// ceilingRiver is ceiling (b): River alone, with the service's worker
// settings (queue.Config defaults, the delivery queue) on a pool of the
// service's size: n no-op jobs inserted first, then worked; the rate is from
// the first job finished to the last (finalized_at), so client start-up is
// not counted, the same as the service's backlog drain.
func ceilingRiver(ctx context.Context, d *db.DB, n int, progress func(int64)) (drainResult, error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, noopWorker{})
	client, err := queue.NewClient(queue.Config{Pool: d.Pool, Workers: workers, Logger: quietLogger()})
	if err != nil {
		return drainResult{}, err
	}
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: noopArgs{N: i}}
	}
	for chunk := range sliceChunks(params, 5000) {
		if _, err := client.InsertManyFast(ctx, chunk); err != nil {
			return drainResult{}, fmt.Errorf("insert no-op jobs: %w", err)
		}
	}
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		return drainResult{}, fmt.Errorf("start river: %w", err)
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_, _ = queue.Stop(stopCtx, client)
	}()
	res, err := waitDrain(ctx, countQuery(d, `SELECT count(*), min(finalized_at), max(finalized_at) FROM river.river_job
		WHERE kind = 'bench_noop' AND state = 'completed'`), int64(n), 2*time.Minute, progress)
	if err != nil {
		return res, err
	}
	_, err = d.Pool.Exec(ctx, `DELETE FROM river.river_job WHERE kind = 'bench_noop'`)
	return res, err
}

// counter counts finished work: how much, and the first and last time
// one finished (nil when none has).
type counter func(ctx context.Context) (count int64, first, last *time.Time, err error)

// countQuery is a counter that runs query, whose one row is (count, first,
// last).
func countQuery(d *db.DB, query string) counter {
	return func(ctx context.Context) (int64, *time.Time, *time.Time, error) {
		var (
			n           int64
			first, last *time.Time
		)
		err := d.Pool.QueryRow(ctx, query).Scan(&n, &first, &last)
		return n, first, last, err
	}
}

// waitDrain polls count until it reaches n.
func waitDrain(ctx context.Context, count counter, n int64, timeout time.Duration, progress func(int64)) (drainResult, error) {
	deadline := time.Now().Add(timeout)
	for {
		got, first, last, err := count(ctx)
		if err != nil {
			return drainResult{}, fmt.Errorf("count finished: %w", err)
		}
		if progress != nil {
			progress(got)
		}
		if got >= n {
			res := drainResult{Jobs: got}
			if first != nil && last != nil {
				res.Elapsed = last.Sub(*first)
			}
			if res.Elapsed > 0 {
				res.Rate = float64(got-1) / res.Elapsed.Seconds()
			}
			return res, nil
		}
		if time.Now().After(deadline) {
			return drainResult{Jobs: got}, fmt.Errorf("only %d of %d finished after %s", got, n, timeout)
		}
		select {
		case <-ctx.Done():
			return drainResult{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func sliceChunks[T any](s []T, size int) func(func([]T) bool) {
	return func(yield func([]T) bool) {
		for len(s) > 0 {
			n := min(size, len(s))
			if !yield(s[:n]) {
				return
			}
			s = s[n:]
		}
	}
}

// bareGin serves ceiling (c): a gin engine in release mode with one handler
// returning a small JSON object, nothing else. The benchmark runs it as a
// child process (platform bench bare-gin), like the service.
func bareGin(ctx context.Context, addr string) error {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.GET("/api/v1/me", func(c *gin.Context) {
		c.JSON(http.StatusOK, gin.H{"data": gin.H{"id": 1, "name": "bench", "subscription_status": "active"}})
	})
	e.GET("/readyz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ready"}) })
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: e, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
