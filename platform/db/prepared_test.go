package db_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
)

// onePool opens a database of its own with a one-connection pool, so that
// every call runs on the same connection and its prepared statements can be
// counted on the server.
func onePool(t *testing.T) *db.DB {
	t.Helper()
	d, err := db.Open(context.Background(), db.Config{URL: dbtest.NewDatabase(t), MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	if _, err := d.Pool.Exec(context.Background(), `CREATE TABLE t (id int PRIMARY KEY, v text);
		INSERT INTO t VALUES (1, 'one'), (2, 'two'), (3, 'three')`); err != nil {
		t.Fatal(err)
	}
	return d
}

// value runs query with arg through p and returns the one text it reads.
func value(t *testing.T, p *db.Prepared, tx pgx.Tx, query string, arg any) string {
	t.Helper()
	var v string
	err := p.Query(context.Background(), tx, query, []any{arg}, func(r db.Rows) error {
		for r.Next() {
			if err := r.Scan(&v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return v
}

// counts reports how many statements p has prepared on the pool's
// connection, and how many the server holds for it.
func counts(t *testing.T, pool *pgxpool.Pool, p *db.Prepared) (ours, server int) {
	t.Helper()
	c, err := pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if err := c.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'bizmsg\_%'`).Scan(&server); err != nil {
		t.Fatal(err)
	}
	return p.PreparedCount(c.Conn()), server
}

const (
	q1 = `SELECT v FROM t WHERE id = $1::int`
	q2 = `SELECT v || '!' FROM t WHERE id = $1::int`
	q3 = `SELECT upper(v) FROM t WHERE id = $1::int`
)

func TestPreparedAdmitsOnSecondRun(t *testing.T) {
	t.Parallel()
	d := onePool(t)
	p := dbtest.Prepared(t, db.PreparedConfig{DB: d, MaxPerConn: 4})

	tests := []struct {
		arg          int
		want         string
		ours, server int
	}{
		{1, "one", 0, 0},   // first run: unprepared
		{2, "two", 1, 1},   // second run: prepared
		{3, "three", 1, 1}, // and reused
	}
	for _, tt := range tests {
		if got := value(t, p, nil, q1, tt.arg); got != tt.want {
			t.Fatalf("value(%d) = %q, want %q", tt.arg, got, tt.want)
		}
		if ours, server := counts(t, d.Pool, p); ours != tt.ours || server != tt.server {
			t.Fatalf("after value(%d): prepared %d (server %d), want %d (%d)", tt.arg, ours, server, tt.ours, tt.server)
		}
	}
}

func TestPreparedBoundAndIdleEviction(t *testing.T) {
	t.Parallel()
	d := onePool(t)
	clk := clock.NewFake(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	p := dbtest.Prepared(t, db.PreparedConfig{DB: d, MaxPerConn: 2, IdleAfter: time.Minute, Now: clk.Now})

	for range 2 {
		for _, q := range []string{q1, q2, q3} {
			value(t, p, nil, q, 1)
		}
	}
	// q3 came third: the set was full of busy statements, so it ran
	// unprepared, and answered all the same.
	if got := value(t, p, nil, q3, 2); got != "TWO" {
		t.Fatalf("q3 = %q", got)
	}
	if ours, server := counts(t, d.Pool, p); ours != 2 || server != 2 {
		t.Fatalf("full set: prepared %d (server %d), want 2 (2)", ours, server)
	}

	// q1 stays busy; q2 goes idle past IdleAfter and gives its place to q3.
	clk.Advance(2 * time.Minute)
	value(t, p, nil, q1, 1)
	if got := value(t, p, nil, q3, 3); got != "THREE" {
		t.Fatalf("q3 = %q", got)
	}
	if ours, server := counts(t, d.Pool, p); ours != 2 || server != 2 {
		t.Fatalf("after eviction: prepared %d (server %d), want 2 (2): the evicted one must be deallocated", ours, server)
	}
	// q2 is no longer prepared: its next run is unprepared (the set is
	// full of statements used within the minute) and still answers.
	if got := value(t, p, nil, q2, 1); got != "one!" {
		t.Fatalf("q2 = %q", got)
	}
}

func TestPreparedDisabled(t *testing.T) {
	t.Parallel()
	d := onePool(t)
	p := dbtest.Prepared(t, db.PreparedConfig{DB: d, MaxPerConn: -1})
	for range 3 {
		if got := value(t, p, nil, q1, 2); got != "two" {
			t.Fatalf("q1 = %q", got)
		}
	}
	if ours, server := counts(t, d.Pool, p); ours != 0 || server != 0 {
		t.Fatalf("disabled: prepared %d (server %d)", ours, server)
	}
}

// A migration that changes the columns a prepared statement returns makes
// Postgres refuse the statement; the run goes through unprepared and the
// statement is prepared afresh.
func TestPreparedStalePlan(t *testing.T) {
	t.Parallel()
	d := onePool(t)
	p := dbtest.Prepared(t, db.PreparedConfig{DB: d})
	const star = `SELECT * FROM t WHERE id = $1::int`
	countCols := func() int {
		var n int
		err := p.Query(context.Background(), nil, star, []any{1}, func(r db.Rows) error {
			for r.Next() {
				n = len(r.(interface{ RawValues() [][]byte }).RawValues())
			}
			return nil
		})
		if err != nil {
			t.Fatalf("after migration: %v", err)
		}
		return n
	}
	countCols()
	if got := countCols(); got != 2 {
		t.Fatalf("columns = %d", got)
	}
	if _, err := d.Pool.Exec(context.Background(), `ALTER TABLE t ADD COLUMN w int`); err != nil {
		t.Fatal(err)
	}
	if got := countCols(); got != 3 {
		t.Fatalf("columns after migration = %d, want 3", got)
	}
	if ours, _ := counts(t, d.Pool, p); ours != 0 {
		t.Fatalf("stale statement still counted: %d", ours)
	}
	countCols()
	if ours, server := counts(t, d.Pool, p); ours != 1 || server != 1 {
		t.Fatalf("re-prepared: %d (server %d), want 1 (1)", ours, server)
	}
}

// In a transaction a statement runs on the transaction's connection,
// prepared there like any other: it sees the transaction's own uncommitted
// writes, and its effect goes with the rollback.
func TestPreparedInTransaction(t *testing.T) {
	t.Parallel()
	d := onePool(t)
	p := dbtest.Prepared(t, db.PreparedConfig{DB: d})
	ctx := context.Background()
	rollback := errors.New("roll back")
	err := p.Tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO t VALUES (4, 'four')`); err != nil {
			return err
		}
		for range 3 {
			if got := value(t, p, tx, q1, 4); got != "four" {
				t.Fatalf("in tx: %q", got)
			}
		}
		if n := p.PreparedCount(tx.Conn()); n != 1 {
			t.Fatalf("prepared in tx: %d, want 1", n)
		}
		if err := p.Exec(ctx, tx, `UPDATE t SET v = $1::text WHERE id = 1`, "uno"); err != nil {
			return err
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatalf("Tx = %v, want fn's error", err)
	}
	if got := value(t, p, nil, q1, 1); got != "one" {
		t.Fatalf("after rollback: %q", got)
	}
	if got := value(t, p, nil, q1, 4); got != "" {
		t.Fatalf("insert survived the rollback: %q", got)
	}
	if err := p.Tx(ctx, func(tx pgx.Tx) error {
		return p.Exec(ctx, tx, `UPDATE t SET v = $1::text WHERE id = 1`, "uno")
	}); err != nil {
		t.Fatal(err)
	}
	if got := value(t, p, nil, q1, 1); got != "uno" {
		t.Fatalf("after commit: %q", got)
	}
}

// A prepared statement made stale by a migration inside a transaction
// aborts it; Tx runs the transaction again on the statement prepared
// afresh, so the caller sees neither the error nor a half-done write.
func TestPreparedTxStalePlan(t *testing.T) {
	t.Parallel()
	d := onePool(t)
	p := dbtest.Prepared(t, db.PreparedConfig{DB: d})
	ctx := context.Background()
	const star = `SELECT * FROM t WHERE id = $1::int`
	runs := 0
	cols := func() int {
		var n int
		err := p.Tx(ctx, func(tx pgx.Tx) error {
			runs++
			if _, err := tx.Exec(ctx, `UPDATE t SET v = v || '+' WHERE id = 2`); err != nil {
				return err
			}
			return p.Query(ctx, tx, star, []any{1}, func(r db.Rows) error {
				for r.Next() {
					n = len(r.(interface{ RawValues() [][]byte }).RawValues())
				}
				return nil
			})
		})
		if err != nil {
			t.Fatalf("Tx: %v", err)
		}
		return n
	}
	cols()
	if got := cols(); got != 2 || runs != 2 {
		t.Fatalf("columns = %d after %d runs", got, runs)
	}
	if _, err := d.Pool.Exec(ctx, `ALTER TABLE t ADD COLUMN w int`); err != nil {
		t.Fatal(err)
	}
	if got := cols(); got != 3 || runs != 4 {
		t.Fatalf("columns after migration = %d after %d runs, want 3 after 4", got, runs)
	}
	if got := value(t, p, nil, `SELECT v FROM t WHERE id = $1::int`, 2); got != "two+++" {
		t.Fatalf("v = %q: the aborted run's write must not stay", got)
	}
}

// With every connection taken, a statement waits at most the pool's
// AcquireTimeout and fails as the database being unavailable (a 503), not
// forever: through Prepared and through bun (database/sql's connector).
func TestAcquireTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := db.Open(ctx, db.Config{URL: dbtest.NewDatabase(t), MaxConns: 1, AcquireTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	p := dbtest.Prepared(t, db.PreparedConfig{DB: d})
	// Prepared and bun name the bound; the pool's own methods (API-key
	// authentication, the central services, River) end with the bound's
	// deadline, which the HTTP layer answers with 503 as well. A caller's
	// earlier deadline is its own, not the bound's.
	named := func(err error) bool { return errors.Is(err, db.ErrAcquireTimeout) && db.IsUnavailable(err) }
	deadline := func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }
	callers := func(err error) bool { return deadline(err) && !errors.Is(err, db.ErrAcquireTimeout) }
	prepared := func(ctx context.Context) error { return p.Exec(ctx, nil, `SELECT 1`) }
	for _, tc := range []struct {
		name string
		run  func(context.Context) error
		want func(error) bool
		// within is the caller's deadline: by default later than
		// AcquireTimeout, so that a wait that ignores the bound fails the
		// test instead of hanging it.
		within time.Duration
	}{
		{"prepared", prepared, named, 0},
		{"pool exec", func(ctx context.Context) error {
			_, err := d.Pool.Exec(ctx, `SELECT 1`)
			return err
		}, deadline, 0},
		{"pool query row", func(ctx context.Context) error {
			var n int
			return d.Pool.QueryRow(ctx, `SELECT 1`).Scan(&n)
		}, deadline, 0},
		{"pool transaction", func(ctx context.Context) error {
			tx, err := d.Pool.Begin(ctx)
			if err == nil {
				_ = tx.Rollback(ctx)
			}
			return err
		}, deadline, 0},
		{"caller's earlier deadline", prepared, callers, 50 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held, err := d.Pool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer held.Release()
			within, wait := 10*time.Second, 200*time.Millisecond
			if tc.within > 0 {
				within, wait = tc.within, tc.within
			}
			callCtx, cancel := context.WithTimeout(ctx, within)
			defer cancel()
			start := time.Now()
			err = tc.run(callCtx)
			if waited := time.Since(start); waited < wait || waited > 5*time.Second {
				t.Fatalf("waited %s, want about %s", waited, wait)
			}
			if err == nil || !tc.want(err) {
				t.Fatalf("err = %v, not the expected kind", err)
			}
		})
	}
}

// A statement whose connection is lost under it (here it terminates its
// own backend, as a server shutting down does, and dies in the pg_sleep
// before its row is sent) ends its rows early. A scan that then finds no
// row and says so does not hide the cause: the error is the statement's
// (57P01, a database unavailable: 503), with the scan's kept, whether the
// statement ran prepared or not, in a transaction or not.
func TestPreparedStatementErrorWinsOverScan(t *testing.T) {
	t.Parallel()
	const kill = `SELECT pg_sleep(0.2)::text IS NULL
		FROM (SELECT pg_terminate_backend(pg_backend_pid()) OFFSET 0) k WHERE $1::bool`
	errNoRow := errors.New("no result row")
	scan := func(r db.Rows) error {
		if !r.Next() {
			return errNoRow
		}
		var ok bool
		return r.Scan(&ok)
	}
	tests := []struct {
		name     string
		prepared bool // run twice harmlessly first, so that it is prepared
		inTx     bool
	}{
		{"unprepared", false, false},
		{"prepared", true, false},
		{"unprepared in a transaction", false, true},
		{"prepared in a transaction", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := onePool(t)
			p := dbtest.Prepared(t, db.PreparedConfig{DB: d})
			ctx := context.Background()
			run := func(die bool) error {
				if !tt.inTx {
					return p.Query(ctx, nil, kill, []any{die}, scan)
				}
				return p.Tx(ctx, func(tx pgx.Tx) error { return p.Query(ctx, tx, kill, []any{die}, scan) })
			}
			if tt.prepared {
				for range 2 {
					if err := run(false); !errors.Is(err, errNoRow) {
						t.Fatalf("harmless run = %v, want the scan's own error", err)
					}
				}
			}
			err := run(true)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "57P01" || !db.IsUnavailable(err) {
				t.Fatalf("run on a connection lost = %v, want the statement's 57P01 (unavailable)", err)
			}
			if !errors.Is(err, errNoRow) {
				t.Fatalf("run on a connection lost = %v, want the scan's error kept beside it", err)
			}
		})
	}
}

// QueryFirst hands the first row to scan and says whether there was one:
// a key that matches no row is found false without an error, and a scan
// error is the call's.
func TestPreparedQueryFirst(t *testing.T) {
	t.Parallel()
	d := onePool(t)
	p := dbtest.Prepared(t, db.PreparedConfig{DB: d})
	boom := errors.New("boom")
	tests := []struct {
		name      string
		query     string
		scanErr   error
		wantFound bool
		wantV     string
		wantErr   error
	}{
		{"a row", `SELECT v FROM t WHERE id = $1`, nil, true, "two", nil},
		{"the first of several", `SELECT v FROM t WHERE id >= $1 ORDER BY id`, nil, true, "two", nil},
		{"no row", `SELECT v FROM t WHERE id = $1 + 10`, nil, false, "", nil},
		{"scan fails", `SELECT v FROM t WHERE id = $1`, boom, true, "", boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var v string
			found, err := p.QueryFirst(context.Background(), nil, tt.query, []any{2}, func(r db.Rows) error {
				if tt.scanErr != nil {
					return tt.scanErr
				}
				return r.Scan(&v)
			})
			if found != tt.wantFound || v != tt.wantV || !errors.Is(err, tt.wantErr) {
				t.Fatalf("QueryFirst = %v, %q, %v; want %v, %q, %v", found, v, err, tt.wantFound, tt.wantV, tt.wantErr)
			}
		})
	}
}
