// Package dbtest gives tests databases of their own on a real Postgres.
//
// The server is found once per test process, in this order:
//  1. a Postgres container started with testcontainers-go when a Docker engine
//     is reachable (DOCKER_HOST or /var/run/docker.sock);
//  2. the server named by TEST_DATABASE_URL;
//  3. the local server at postgres://postgres@127.0.0.1:5432/postgres.
//
// With none reachable the test fails with a message saying what was tried; it
// never skips. Every NewDatabase call creates a fresh database that is dropped
// when the test ends, so tests and parallel test runs never share state.
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/bizmsg/platform/platform/batch"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/migrate"
)

// LocalURL is the fallback server: the machine's own Postgres.
const LocalURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// server resolves the admin URL once per process; tests share the server, never
// a database.
var server = sync.OnceValues(findServer)

func findServer() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var tried []string
	if dockerReachable() {
		u, err := startContainer(ctx)
		if err == nil {
			return u, nil
		}
		tried = append(tried, fmt.Sprintf("testcontainers: %v", err))
	} else {
		tried = append(tried, "testcontainers: no Docker engine (DOCKER_HOST unset, /var/run/docker.sock missing)")
	}
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		if err := ping(ctx, u); err != nil {
			return "", fmt.Errorf("TEST_DATABASE_URL (%s) is not reachable: %w", db.Redact(u), err)
		}
		return u, nil
	}
	tried = append(tried, "TEST_DATABASE_URL: unset")
	if err := ping(ctx, LocalURL); err != nil {
		tried = append(tried, fmt.Sprintf("local Postgres %s: %v", LocalURL, err))
		return "", fmt.Errorf("integration tests need PostgreSQL and found none:\n  - %s\nStart Postgres (e.g. pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start), "+
			"set TEST_DATABASE_URL, or run a Docker engine", strings.Join(tried, "\n  - "))
	}
	return LocalURL, nil
}

func dockerReachable() bool {
	if os.Getenv("DOCKER_HOST") != "" {
		return true
	}
	_, err := os.Stat("/var/run/docker.sock")
	return err == nil
}

func startContainer(ctx context.Context) (string, error) {
	c, err := tcpostgres.Run(ctx, "postgres:16-alpine",
		tcpostgres.WithUsername("postgres"),
		tcpostgres.WithPassword("postgres"),
		tcpostgres.WithDatabase("postgres"),
		tcpostgres.BasicWaitStrategies(),
		testcontainers.WithEnv(map[string]string{"POSTGRES_INITDB_ARGS": "--no-sync"}),
	)
	if err != nil {
		return "", fmt.Errorf("start postgres container: %w", err)
	}
	// The container lives as long as the test process; testcontainers' reaper
	// removes it afterwards.
	return c.ConnectionString(ctx, "sslmode=disable")
}

func ping(ctx context.Context, u string) error {
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		return err
	}
	cfg.ConnectTimeout = 3 * time.Second
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// ServerURL returns the admin URL of the test server, failing the test if no
// server is reachable.
func ServerURL(t testing.TB) string {
	t.Helper()
	u, err := server()
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	return u
}

// NewDatabase creates an empty database for this test, drops it when the test
// ends, and returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	admin := ServerURL(t)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("dbtest: random name: %v", err)
	}
	name := "bizmsg_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("dbtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("dbtest: create database: %v", err)
	}
	t.Cleanup(func() {
		// DROP DATABASE waits for the server's other work (a busy machine
		// running the whole suite took over 30 s): allow it minutes.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("dbtest: connect for cleanup: %v", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("dbtest: drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("dbtest: parse url: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// Open connects to dbURL with a pool closed when the test ends.
func Open(t testing.TB, dbURL string) *db.DB {
	t.Helper()
	d, err := db.Open(context.Background(), db.Config{URL: dbURL})
	if err != nil {
		t.Fatalf("dbtest: open: %v", err)
	}
	t.Cleanup(d.Close)
	return d
}

// Prepared returns the statement cache cfg configures, failing the test
// when cfg is refused.
func Prepared(t testing.TB, cfg db.PreparedConfig) *db.Prepared {
	t.Helper()
	p, err := db.NewPrepared(cfg)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	return p
}

// Migrated returns a fresh database with the central, network and river schemas
// migrated, and its URL.
func Migrated(t testing.TB) (*db.DB, string) {
	t.Helper()
	u := NewDatabase(t)
	d := Open(t, u)
	m, err := migrate.New(migrate.Config{Pool: d.Pool, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("dbtest: migrator: %v", err)
	}
	if _, err := m.Base(context.Background()); err != nil {
		t.Fatalf("dbtest: migrate: %v", err)
	}
	return d, u
}

// WaitForLockWaits waits until n backends of d's database wait on a lock
// (a test holding a lock until other work has queued behind it), failing
// the test after 10 seconds.
func WaitForLockWaits(t testing.TB, d *db.DB, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		var waiting int
		if err := d.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatalf("count lock waits: %v", err)
		}
		if waiting == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d backends wait on a lock, want %d", waiting, n)
		}
		<-tick.C
	}
}

// LockTable takes an ACCESS EXCLUSIVE lock on table in a transaction of
// its own, so that every statement reading it waits, and returns the
// function that commits it (releasing the lock); the lock is released when
// the test ends in any case.
func LockTable(t testing.TB, d *db.DB, table string) (release func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := d.Pool.Begin(ctx)
	if err != nil {
		t.Fatalf("lock %s: %v", table, err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	if _, err := tx.Exec(ctx, `LOCK TABLE `+table+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatalf("lock %s: %v", table, err)
	}
	return func() {
		t.Helper()
		if err := tx.Commit(ctx); err != nil {
			t.Fatalf("unlock %s: %v", table, err)
		}
	}
}

// SharedRuns drives a test of calls that share a batch.Batcher's runs. on
// builds the code under test with the batch.Config it is given (one run at a
// time, each run's size recorded, its OnQueue watched) and returns the call
// that runs first, which is held behind an ACCESS EXCLUSIVE lock on table
// until queue has made the n calls that wait for it (queue returns when they
// have returned) and the batcher has told that n wait together
// (batch.Config.OnQueue). It fails the test if the held call fails, and
// returns the runs' sizes: [1 n] when the n queued calls shared one run.
func SharedRuns(t testing.TB, d *db.DB, table string, on func(batch.Config) func() error, queue func(), n int) []int {
	t.Helper()
	var mu sync.Mutex
	var runs []int
	gathered := make(chan struct{})
	var once sync.Once
	first := on(batch.Config{MaxInFlight: 1, Sizes: batch.ObserverFunc(func(items float64) {
		mu.Lock()
		runs = append(runs, int(items))
		mu.Unlock()
	}), OnQueue: func(waiting int) {
		if waiting == n {
			once.Do(func() { close(gathered) })
		}
	}})
	release := LockTable(t, d, table)
	held := make(chan error, 1)
	go func() { held <- first() }()
	WaitForLockWaits(t, d, 1)
	done := make(chan struct{})
	go func() {
		queue()
		close(done)
	}()
	select {
	case <-gathered:
	case <-time.After(10 * time.Second):
		t.Fatalf("the %d calls did not queue behind the held run within 10s", n)
	}
	release()
	<-done
	if err := <-held; err != nil {
		t.Fatalf("the held call: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	return runs
}
