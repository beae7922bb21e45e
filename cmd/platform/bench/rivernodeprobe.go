package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/queue"
)

// statements runs River's own statements (its driver's, as its producer,
// completer, elector and maintenance services run them) on River schema s
// through the coordinator, one by one, and returns each one's outcome. On
// the coordinator's regular river schema they are the control.
func (b *riverNodeBench) statements(ctx context.Context, s string) ([]probeStep, error) {
	ex := riverpgxv5.New(b.d.Pool).GetExecutor()
	// A running job for the completer, a retryable one for the rescuer,
	// the scheduler and the retry.
	var running, other int64
	if err := b.d.Pool.QueryRow(ctx, `INSERT INTO `+s+`.river_job (args, kind, max_attempts, queue, state, attempt, attempted_at, attempted_by)
		VALUES ('{}', 'probe', 5, 'probe', 'running', 1, now() - interval '1 hour', '{probe}') RETURNING id`).Scan(&running); err != nil {
		return nil, fmt.Errorf("a running job in %s: %w", s, err)
	}
	if err := b.d.Pool.QueryRow(ctx, `INSERT INTO `+s+`.river_job (args, kind, max_attempts, queue, state, scheduled_at)
		VALUES ('{}', 'probe', 5, 'probe', 'retryable', now() - interval '1 second') RETURNING id`).Scan(&other); err != nil {
		return nil, fmt.Errorf("a retryable job in %s: %w", s, err)
	}
	now := time.Now()
	completed := rivertype.JobStateCompleted
	var out []probeStep
	try := func(step string, f func() error) {
		p := probeStep{Step: step}
		if err := f(); err != nil {
			p.Err = err.Error()
		}
		out = append(out, p)
	}
	try("fetch (JobGetAvailable: FOR UPDATE SKIP LOCKED)", func() error {
		_, err := ex.JobGetAvailable(ctx, &riverdriver.JobGetAvailableParams{ClientID: "probe", MaxAttemptedBy: 100, MaxToLock: 10,
			Queue: queue.QueueDelivery, Schema: s})
		return err
	})
	try("complete (JobSetStateIfRunningMany, the completer)", func() error {
		rows, err := ex.JobSetStateIfRunningMany(ctx, &riverdriver.JobSetStateIfRunningManyParams{ID: []int64{running},
			Attempt: []*int{nil}, ErrData: [][]byte{nil}, FinalizedAt: []*time.Time{&now}, MetadataDoMerge: []bool{false},
			MetadataUpdates: [][]byte{nil}, ScheduledAt: []*time.Time{nil}, Schema: s, State: []rivertype.JobState{completed}})
		if err == nil && (len(rows) != 1 || rows[0].State != completed) {
			err = errors.New("the job is not completed")
		}
		return err
	})
	try("elect a leader (LeaderAttemptElect)", func() error {
		_, err := ex.LeaderAttemptElect(ctx, &riverdriver.LeaderElectParams{LeaderID: "probe", Schema: s, TTL: time.Second})
		return err
	})
	try("expire leaders (LeaderDeleteExpired, the elector)", func() error {
		_, err := ex.LeaderDeleteExpired(ctx, &riverdriver.LeaderDeleteExpiredParams{Schema: s})
		return err
	})
	try("scheduler (JobSchedule)", func() error {
		_, err := ex.JobSchedule(ctx, &riverdriver.JobScheduleParams{Max: 10, Schema: s})
		return err
	})
	try("job cleaner (JobDeleteBefore)", func() error {
		_, err := ex.JobDeleteBefore(ctx, &riverdriver.JobDeleteBeforeParams{CompletedDoDelete: true, CompletedFinalizedAtHorizon: now.Add(-time.Hour),
			Max: 10, Schema: s})
		return err
	})
	try("rescuer (JobGetStuck, JobRescueMany)", func() error {
		if _, err := ex.JobGetStuck(ctx, &riverdriver.JobGetStuckParams{Max: 10, Schema: s, StuckHorizon: now}); err != nil {
			return err
		}
		_, err := ex.JobRescueMany(ctx, &riverdriver.JobRescueManyParams{ID: []int64{other}, Error: [][]byte{[]byte(`{}`)},
			FinalizedAt: []*time.Time{nil}, ScheduledAt: []time.Time{now}, Schema: s, State: []string{"available"}, StuckHorizon: now})
		return err
	})
	try("queue cleaner (QueueDeleteExpired)", func() error {
		_, err := ex.QueueDeleteExpired(ctx, &riverdriver.QueueDeleteExpiredParams{Max: 10, Schema: s, UpdatedAtHorizon: now.Add(-time.Hour)})
		return err
	})
	try("retry (JobRetry)", func() error {
		_, err := ex.JobRetry(ctx, &riverdriver.JobRetryParams{ID: other, Schema: s})
		return err
	})
	try("NOTIFY (NotifyMany)", func() error {
		return ex.NotifyMany(ctx, &riverdriver.NotifyManyParams{Payload: []string{"{}"}, Schema: s, Topic: "river_insert"})
	})
	if _, err := b.d.Pool.Exec(ctx, "DELETE FROM "+s+".river_job WHERE kind = 'probe'"); err != nil {
		return out, fmt.Errorf("clear the probe's jobs: %w", err)
	}
	return out, nil
}

// probe runs River's statements on the first node schema through the
// coordinator, each step recorded with its error.
func (b *riverNodeBench) probe(ctx context.Context) error {
	s := "river_node1"
	t, _, err := b.nodeTenant(s)
	if err != nil {
		return err
	}
	ins, err := b.riverClient(b.d.Pool, s, false)
	if err != nil {
		return err
	}
	add := func(step string, err error, detail string) {
		p := probeStep{Step: step, Detail: detail}
		if err != nil {
			p.Err = err.Error()
		}
		b.rep.Probe = append(b.rep.Probe, p)
	}
	twoPC := func() int64 {
		n, _ := b.count(ctx, "SELECT count(*) FROM pg_dist_transaction")
		return n
	}
	before := twoPC()
	err = b.send(ctx, t, ins)
	add("InsertManyFastTx (COPY) in the tenant's transaction", err, fmt.Sprintf("%d 2PC records", twoPC()-before))
	before = twoPC()
	err = db.BeginFunc(ctx, b.d.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "UPDATE "+t.Tenant.Table("sender_numbers")+" SET updated_at = now() WHERE id = $1", t.Senders[0]); err != nil {
			return err
		}
		_, err := ins.InsertTx(ctx, tx, queue.DeliverArgs{TenantRef: queue.RefOf(t.Tenant), MessageID: -1}, nil)
		return err
	})
	add("InsertTx in the tenant's transaction", err, fmt.Sprintf("%d 2PC records", twoPC()-before))
	err = pgx.BeginFunc(ctx, b.d.Pool, func(tx pgx.Tx) error {
		_, err := ins.InsertManyTx(ctx, tx, []river.InsertManyParams{{Args: queue.DeliverArgs{TenantRef: queue.RefOf(t.Tenant), MessageID: -2},
			InsertOpts: &river.InsertOpts{Queue: queue.QueueDelivery, UniqueOpts: river.UniqueOpts{ByArgs: true}}}})
		return err
	})
	add("InsertManyTx, unique by arguments", err, "")
	_, err = ins.InsertMany(ctx, []river.InsertManyParams{{Args: queue.DeliverArgs{TenantRef: queue.RefOf(t.Tenant), MessageID: -3},
		InsertOpts: &river.InsertOpts{Queue: queue.QueueDelivery, ScheduledAt: time.Now().Add(time.Second)}}})
	add("InsertMany, scheduled 1 s ahead", err, "")
	control, err := b.statements(ctx, "river")
	if err != nil {
		return err
	}
	onNode, err := b.statements(ctx, s)
	if err != nil {
		return err
	}
	for i, st := range onNode {
		st.Step = "River's statement: " + st.Step
		st.Detail = "on the coordinator's river schema: ok"
		if control[i].Err != "" {
			st.Detail = "on the coordinator's river schema: " + control[i].Err
		}
		b.rep.Probe = append(b.rep.Probe, st)
	}
	queued, err := b.count(ctx, "SELECT count(*) FROM "+s+".river_job")
	if err != nil {
		return err
	}

	// A worker: leader election, LISTEN/NOTIFY, fetch FOR UPDATE SKIP
	// LOCKED, completion, the scheduler and the other maintenance
	// services, all through the coordinator.
	wc, err := b.riverClient(b.d.Pool, s, true)
	if err != nil {
		return err
	}
	mark := b.logs.mark()
	if err := wc.Start(ctx); err != nil {
		add("start a working client", err, "")
		return nil
	}
	defer func() { _ = wc.Stop(context.WithoutCancel(ctx)) }()
	t0 := time.Now()
	err = waitFor(ctx, 15*time.Second, func() (bool, error) {
		if e := b.logs.errOf("Elector: Error attempting to elect", mark); e != "" {
			return false, errors.New(e)
		}
		n, err := b.count(ctx, "SELECT count(*) FROM "+s+".river_leader")
		return n > 0, err
	})
	add("leader election (a row in river_leader)", err, fmt.Sprintf("after %s", time.Since(t0).Round(time.Millisecond)))
	t0 = time.Now()
	err = waitFor(ctx, 20*time.Second, func() (bool, error) {
		if e := b.logs.errOf("Error fetching jobs", mark); e != "" {
			return false, errors.New(e)
		}
		n, err := b.count(ctx, "SELECT count(*) FROM "+s+".river_job WHERE state = 'completed'")
		return n >= queued, err
	})
	add(fmt.Sprintf("fetch (FOR UPDATE SKIP LOCKED) and complete the %d jobs, the scheduled one included", queued), err,
		fmt.Sprintf("after %s", time.Since(t0).Round(time.Millisecond)))
	// The client is idle: a job inserted now is fetched at once only if
	// the insert's notification reached its listener (its poll is 1 s).
	var res *rivertype.JobInsertResult
	t0 = time.Now()
	err = pgx.BeginFunc(ctx, b.d.Pool, func(tx pgx.Tx) error {
		var err error
		res, err = ins.InsertTx(ctx, tx, queue.DeliverArgs{TenantRef: queue.RefOf(t.Tenant), MessageID: -4}, nil)
		return err
	})
	if e := b.logs.errOf("Error fetching jobs", mark); err == nil && e != "" {
		err = errors.New("not fetched: " + e)
	} else if err == nil {
		err = waitFor(ctx, 10*time.Second, func() (bool, error) {
			n, err := b.count(ctx, "SELECT count(*) FROM "+s+".river_job WHERE id = $1 AND state = 'completed'", res.Job.ID)
			return n > 0, err
		})
	}
	add("LISTEN/NOTIFY: an idle client's job completes", err, fmt.Sprintf("in %s", time.Since(t0).Round(time.Millisecond)))
	// The paths count their own jobs: the probe's go.
	if err := wc.Stop(ctx); err != nil {
		return fmt.Errorf("stop the probe's client: %w", err)
	}
	for _, ns := range b.schemaOn {
		if _, err := b.d.Pool.Exec(ctx, "DELETE FROM "+ns+".river_job"); err != nil {
			return fmt.Errorf("clear %s: %w", ns, err)
		}
	}
	return nil
}

// printSteps prints the probe's steps, each ok or how it fails.
func printSteps(w io.Writer, steps []probeStep) {
	for _, s := range steps {
		res := "ok"
		if s.Err != "" {
			res = "FAILS: " + s.Err
		}
		fmt.Fprintf(w, "  %s: %s", s.Step, res)
		if s.Detail != "" {
			fmt.Fprintf(w, " (%s)", s.Detail)
		}
		fmt.Fprintln(w)
	}
}
