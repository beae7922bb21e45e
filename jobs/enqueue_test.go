package jobs_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/bizmsg/platform/jobs"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/migrate"
)

// jobRow is every column of river_job that River sets at insertion, as text
// so that the two rows compare whatever their types.
type jobRow struct {
	Args, Kind, MaxAttempts, Priority, Queue, State, Tags, Metadata, Attempt string
	UniqueKey, UniqueStates, AttemptedAt, FinalizedAt, Errors, AttemptedBy   *string
	CreatedAt, ScheduledAt                                                   time.Time
}

func readJob(t *testing.T, ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, id int64) jobRow {
	t.Helper()
	var r jobRow
	err := q.QueryRow(ctx, `SELECT args::text, kind, max_attempts::text, priority::text, queue, state::text,
	       tags::text, metadata::text, attempt::text, encode(unique_key, 'hex'), unique_states::text,
	       attempted_at::text, finalized_at::text, errors::text, attempted_by::text, created_at, scheduled_at
	  FROM river.river_job WHERE id = $1`, id).Scan(&r.Args, &r.Kind, &r.MaxAttempts, &r.Priority, &r.Queue,
		&r.State, &r.Tags, &r.Metadata, &r.Attempt, &r.UniqueKey, &r.UniqueStates, &r.AttemptedAt,
		&r.FinalizedAt, &r.Errors, &r.AttemptedBy, &r.CreatedAt, &r.ScheduledAt)
	if err != nil {
		t.Fatalf("read job %d: %v", id, err)
	}
	return r
}

// The enqueuer's job row is the row River's own InsertTx writes for the same
// DeliverArgs, column by column; River's client works it; and the enqueuer
// notifies River's insert topic, at most once per NotifyEvery.
func TestDeliveryEnqueuer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := dbtest.Migrated(t)
	args := jobs.DeliverArgs{OrgID: 7, Schema: "tenant_7", MessageID: 4242, SenderID: 3}

	client, err := river.NewClient(riverpgxv5.New(d.Pool), &river.Config{Schema: migrate.RiverSchema})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := d.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := client.InsertTx(ctx, tx, args, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	want := readJob(t, ctx, d.Pool, res.Job.ID)

	listener, err := d.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Release()
	if _, err := listener.Exec(ctx, `LISTEN "river.river_insert"`); err != nil {
		t.Fatal(err)
	}

	e := jobs.NewDeliveryEnqueuer(time.Hour)
	insert := func() int64 {
		t.Helper()
		var id int64
		err := d.Pool.QueryRow(ctx, `WITH src AS (SELECT $1::bigint AS org_id, $2::text AS schema, $3::bigint AS message_id, $4::bigint AS sender_id),
		  j AS (`+e.InsertSQL("src")+`)
		SELECT id FROM j`, args.OrgID, args.Schema, args.MessageID, args.SenderID).Scan(&id)
		if err != nil {
			t.Fatalf("enqueue: %v", err)
		}
		return id
	}
	first := insert()
	got := readJob(t, ctx, d.Pool, first)

	for _, r := range []*jobRow{&want, &got} {
		if d := r.ScheduledAt.Sub(r.CreatedAt); d < -time.Second || d > time.Second {
			t.Errorf("scheduled_at %v is not created_at %v", r.ScheduledAt, r.CreatedAt)
		}
		if d := time.Since(r.CreatedAt); d < -time.Minute || d > time.Minute {
			t.Errorf("created_at %v is not now", r.CreatedAt)
		}
		r.CreatedAt, r.ScheduledAt = time.Time{}, time.Time{}
		var a map[string]any // jsonb text is canonical, but compare the values
		if err := json.Unmarshal([]byte(r.Args), &a); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(a)
		r.Args = string(b)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("enqueued job differs from River's:\n got %+v\nwant %+v", got, want)
	}

	// The first insert notified; the second, within the interval, did not.
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	n, err := listener.Conn().WaitForNotification(wctx)
	cancel()
	if err != nil {
		t.Fatalf("no insert notification: %v", err)
	}
	if n.Channel != "river.river_insert" || n.Payload != `{"queue": "delivery"}` {
		t.Fatalf("notification %q %q", n.Channel, n.Payload)
	}
	insert()
	wctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
	if n, err := listener.Conn().WaitForNotification(wctx); err == nil {
		t.Fatalf("second insert within the interval notified: %+v", n)
	}
	cancel()

	// River works the enqueued jobs as its own.
	worked := make(chan int64, 4)
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(_ context.Context, j *river.Job[jobs.DeliverArgs]) error {
		if j.Args != args {
			t.Errorf("worked args %+v, want %+v", j.Args, args)
		}
		worked <- j.ID
		return nil
	}))
	worker, err := river.NewClient(riverpgxv5.New(d.Pool), &river.Config{
		Schema: migrate.RiverSchema, Workers: workers,
		Queues: map[string]river.QueueConfig{jobs.QueueDelivery: {MaxWorkers: 2}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = worker.Stop(ctx) }()
	seen := map[int64]bool{}
	for len(seen) < 3 {
		select {
		case id := <-worked:
			seen[id] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("worked %v of the 3 jobs", seen)
		}
	}
	if !seen[first] {
		t.Fatalf("the enqueued job %d was not worked: %v", first, seen)
	}
}
