package queue_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/queue"
)

// The Rescuer's statements (queries/rescue.sql and due.sql) are the
// platform's only writes to River's tables. These tests hold them to the
// River they were written against: a River upgrade that changes what they rely on fails here, not
// silently in production.

// riverMigrationChecked is the last migration of River's main line that
// the statements were checked against (River v0.51.2: 008_job_id_autoincrement).
const riverMigrationChecked = 8

type rescueBundle struct {
	db    *db.DB
	pool  *pgxpool.Pool
	quiet *slog.Logger
}

func setupRescue(t *testing.T) *rescueBundle {
	t.Helper()
	d, _ := dbtest.Migrated(t)
	return &rescueBundle{db: d, pool: d.Pool, quiet: slog.New(slog.NewJSONHandler(io.Discard, nil))}
}

// River's schema has the columns, types, states and migration that the
// rescue and due statements name.
func TestRescueRiverSchema(t *testing.T) {
	t.Parallel()
	b := setupRescue(t)
	ctx := context.Background()
	var version int
	if err := b.pool.QueryRow(ctx, `SELECT max(version) FROM river.river_migration WHERE line = 'main'`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != riverMigrationChecked {
		t.Fatalf("River's schema is at migration %d; queries/rescue.sql was checked against %d. Read River's rescuer "+
			"(internal/maintenance/job_rescuer.go) and scheduler at the new version, adjust queries/rescue.sql and due.sql, "+
			"then riverMigrationChecked", version, riverMigrationChecked)
	}
	want := map[string]string{
		"id":           "bigint",
		"state":        "river_job_state",
		"kind":         "text",
		"attempt":      "smallint",
		"max_attempts": "smallint",
		"attempted_at": "timestamp with time zone",
		"scheduled_at": "timestamp with time zone",
		"finalized_at": "timestamp with time zone",
		"errors":       "_jsonb",
		"metadata":     "jsonb",
		"unique_key":   "bytea",
	}
	rows, err := b.pool.Query(ctx, `SELECT column_name,
		CASE WHEN data_type IN ('USER-DEFINED', 'ARRAY') THEN udt_name ELSE data_type END
		FROM information_schema.columns WHERE table_schema = 'river' AND table_name = 'river_job'`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			t.Fatal(err)
		}
		got[name] = typ
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for col, typ := range want {
		if got[col] != typ {
			t.Errorf("river.river_job.%s is %q, the rescue relies on %q", col, got[col], typ)
		}
	}
	var states []string
	if err := b.pool.QueryRow(ctx, `SELECT array_agg(enumlabel::text) FROM pg_enum
		WHERE enumtypid = 'river.river_job_state'::regtype`).Scan(&states); err != nil {
		t.Fatal(err)
	}
	for _, s := range []rivertype.JobState{rivertype.JobStateRunning, rivertype.JobStateAvailable,
		rivertype.JobStateDiscarded, rivertype.JobStateScheduled, rivertype.JobStateRetryable} {
		if !slices.Contains(states, string(s)) {
			t.Errorf("river_job_state has no %q (it has %v)", s, states)
		}
	}
}

// probeArgs is a job that tells the test it ran.
type probeArgs struct{}

func (probeArgs) Kind() string { return "test_rescue_probe" }

type probeWorker struct {
	river.WorkerDefaults[probeArgs]
	ran chan *rivertype.JobRow
}

func (w *probeWorker) Work(_ context.Context, job *river.Job[probeArgs]) error {
	w.ran <- job.JobRow
	return nil
}

// A job the Rescuer frees is worked by River as one River's own rescuer
// freed: fetched at once, its attempt counted on from the dead run's, the
// rescue's error read back as the dead run's AttemptError, and completed.
func TestRescuedJobIsWorkedByRiver(t *testing.T) {
	t.Parallel()
	b := setupRescue(t)
	ctx := context.Background()
	w := &probeWorker{ran: make(chan *rivertype.JobRow, 1)}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	c, err := queue.NewClient(queue.Config{Pool: b.pool, Workers: workers, Logger: b.quiet, FetchPollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Insert(ctx, probeArgs{}, &river.InsertOpts{Queue: river.QueueDefault, MaxAttempts: 5})
	if err != nil {
		t.Fatal(err)
	}
	// As a worker process killed mid-run leaves it: running, its first
	// attempt started an hour ago.
	if _, err := b.pool.Exec(ctx, `UPDATE river.river_job SET state = 'running', attempt = 1,
		attempted_at = now() - interval '1 hour', attempted_by = '{dead-worker}' WHERE id = $1`, res.Job.ID); err != nil {
		t.Fatal(err)
	}
	r, err := queue.NewRescuer(queue.RescuerConfig{DB: b.db, Kinds: map[string]time.Duration{probeArgs{}.Kind(): 10 * time.Second}, Logger: b.quiet})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := r.RescueOnce(ctx); err != nil || n != 1 {
		t.Fatalf("RescueOnce = %d, %v; want 1", n, err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = queue.Stop(stopCtx, c)
	})
	var job *rivertype.JobRow
	select {
	case job = <-w.ran:
	case <-time.After(20 * time.Second):
		t.Fatal("River did not work the rescued job within 20 s")
	}
	if job.ID != res.Job.ID || job.Attempt != 2 {
		t.Fatalf("River ran job %d at attempt %d; want job %d at attempt 2", job.ID, job.Attempt, res.Job.ID)
	}
	if len(job.Errors) != 1 || job.Errors[0].Attempt != 1 || job.Errors[0].At.IsZero() ||
		!strings.Contains(job.Errors[0].Error, "its worker stopped answering") {
		t.Fatalf("River read the job's errors as %+v; want the rescue's, for attempt 1", job.Errors)
	}
	var meta struct {
		Rescues int `json:"river:rescue_count"`
	}
	if err := json.Unmarshal(job.Metadata, &meta); err != nil || meta.Rescues != 1 {
		t.Fatalf("metadata %s (%v), want river:rescue_count 1", job.Metadata, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := c.JobGet(ctx, job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State == rivertype.JobStateCompleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rescued job is %s 20 s after it ran, want completed", got.State)
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
		}
	}
}
