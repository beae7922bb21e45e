package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/joboutbox"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/senders"
)

// Job outbox tests (docs/scaling.md, §Jobs): a send's transaction writes
// its delivery job into the tenant's job_outbox, and the mover puts it in
// River; whatever happens to the mover, each message is delivered once.

// outboxRows counts org's job_outbox rows.
func (e *msgEnv) outboxRows(org *Org) int {
	e.t.Helper()
	var n int
	if err := e.App.DB.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM `+org.Tenant.Table("job_outbox")).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// waitMoved waits until org's job outbox is empty: every job its
// transactions queued is in River (a move commits River's insert before
// the outbox rows' delete).
func (e *msgEnv) waitMoved(org *Org) {
	e.t.Helper()
	poll(e.t, 10*time.Second, func() (bool, string) {
		n := e.outboxRows(org)
		return n == 0, fmt.Sprintf("%d jobs in the job outbox", n)
	})
}

// deliveryJobs counts River's delivery jobs of org's message id, and how
// many of them have finished (completed).
func (e *msgEnv) deliveryJobs(org *Org, id int64) (all, completed int) {
	e.t.Helper()
	if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE state = 'completed')
		FROM river.river_job WHERE kind = 'message_delivery' AND args ->> 'schema' = $1 AND (args ->> 'message_id')::bigint = $2`,
		org.Tenant.Schema, id).Scan(&all, &completed); err != nil {
		e.t.Fatal(err)
	}
	return all, completed
}

// Messages sent at once are each delivered once, through the outbox: the
// network holds each once, River one delivery job each, and the outbox is
// empty after. Each goes to a recipient of its own: a message behind an
// earlier one of its conversation may get a second job, the hand-over of
// the job that delivers the earlier one (docs/design.md, §Delivery order).
func TestJobOutboxDeliversOnce(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true, OutboxOnOneServer: true})
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	const n = 24
	for i := range n {
		e.recipient(phoneN(10 + i))
	}
	ids := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := e.send(org, text(sid, phoneN(10+i), fmt.Sprintf("outbox %d", i)))
			if r.Status == 202 {
				var body struct {
					Data message `json:"data"`
				}
				r.JSON(t, &body)
				ids[i] = body.Data.ID
			} else {
				t.Errorf("send %d = %d %s", i, r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	e.waitCounts(org, 30*time.Second, "every message delivered", func(c map[string]int) bool { return c["delivered"] == n })
	if got := e.networkMessages(org); got != n {
		t.Fatalf("the network holds %d messages for %d accepted", got, n)
	}
	e.requireNetworkIDs(org)
	for _, id := range ids {
		if all, _ := e.deliveryJobs(org, id); all != 1 {
			t.Fatalf("message %d has %d delivery jobs, want 1", id, all)
		}
	}
	if rows := e.outboxRows(org); rows != 0 {
		t.Fatalf("the job outbox holds %d rows after the moves", rows)
	}

	// What the outbox adds to a send's way to delivery: from the 202 to
	// its job's insert into River (River stamps created_at with this
	// machine's clock), for sends one after the other. Logged, not
	// asserted: tests do not time things.
	var lags []time.Duration
	for i := range 10 {
		m := accepted(t, e.send(org, text(sid, phoneN(10+i%4), fmt.Sprintf("lag %d", i))))
		answered := time.Now()
		var created time.Time
		poll(t, 10*time.Second, func() (bool, string) {
			err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT created_at FROM river.river_job
				WHERE kind = 'message_delivery' AND args ->> 'schema' = $1 AND (args ->> 'message_id')::bigint = $2`,
				org.Tenant.Schema, m.ID).Scan(&created)
			return err == nil, fmt.Sprintf("message %d's job: %v", m.ID, err)
		})
		lags = append(lags, created.Sub(answered))
	}
	slices.Sort(lags)
	t.Logf("from the 202 to the job's insert into River: median %s, max %s (negative: moved before the answer arrived)",
		lags[len(lags)/2], lags[len(lags)-1])
}

// A move that dies after River committed its jobs and before the outbox
// rows' delete committed leaves the rows; the next move inserts their jobs
// again, and nothing is doubled: the message is delivered once (its second
// job finds it sent), and a webhook delivery job, unique while it is not
// finished, is not inserted twice.
func TestJobOutboxMoveDiesBeforeDelete(t *testing.T) {
	t.Parallel()
	e, failing, failed := startDyingMover(t)
	ctx := context.Background()
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	e.recipient(phoneN(10))
	failing.Store(true)

	m := accepted(t, e.send(org, text(sid, phoneN(10), "moved twice")))
	e.waitStatus(org, m.ID, "delivered", 30*time.Second)
	if failed.Load() == 0 || e.outboxRows(org) != 1 {
		t.Fatalf("%d failed moves, %d outbox rows: want the move to have died, its row left", failed.Load(), e.outboxRows(org))
	}
	// Each move that died (the tenant's mover is woken by other writes of
	// the tenant too) inserted the row's job once; the move that does not
	// die inserts it once more and deletes the row.
	failing.Store(false)
	if _, err := e.App.Outbox.Move(ctx, org.Tenant); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, func() (bool, string) {
		all, done := e.deliveryJobs(org, m.ID)
		want := int(failed.Load()) + 1
		return all == want && done == want && e.outboxRows(org) == 0,
			fmt.Sprintf("%d delivery jobs of the message, %d completed; want %d, all, and no outbox row", all, done, want)
	})
	if got := e.networkMessages(org); got != 1 {
		t.Fatalf("the network holds %d messages for the one sent", got)
	}
	if rows := e.outboxRows(org); rows != 0 {
		t.Fatalf("the job outbox holds %d rows", rows)
	}

	// A webhook delivery job, due in an hour (so it stays scheduled), moved
	// by a move that dies and then by one that does not: River holds it once.
	failing.Store(true)
	job := queue.WebhookDeliveryJob(queue.WebhookDeliveryArgs{TenantRef: queue.RefOf(org.Tenant), DeliveryID: 987654, EndpointID: 1})
	job.InsertOpts.ScheduledAt = time.Now().Add(time.Hour)
	if err := db.BeginFunc(ctx, e.App.DB.Pool, func(tx pgx.Tx) error {
		_, err := e.App.Outbox.InsertManyFastTx(ctx, tx, []river.InsertManyParams{job})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	webhookJobs := func() int {
		var n int
		if err := e.App.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM river.river_job
			WHERE kind = 'webhook_delivery' AND (args ->> 'delivery_id')::bigint = 987654`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	poll(t, 10*time.Second, func() (bool, string) {
		return webhookJobs() == 1, "waiting for the dying move's River commit"
	})
	failing.Store(false)
	if _, err := e.App.Outbox.Move(ctx, org.Tenant); err != nil {
		t.Fatal(err)
	}
	if n, rows := webhookJobs(), e.outboxRows(org); n != 1 || rows != 0 {
		t.Fatalf("%d webhook jobs of the delivery in River, %d outbox rows: want 1 and 0", n, rows)
	}
}

// On one server the outbox is direct: a job queued through it is River's
// in the writer's transaction, and gone with it when that rolls back; no
// outbox row is written; and its coordinator writes are the writer's own
// (Applies is false). A send's delivery job exists when its 202 is
// answered.
func TestJobOutboxDirectOnOneServer(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true})
	ctx := context.Background()
	org := e.Register(t)
	if e.App.Outbox.Applies(senders.KindCentral) {
		t.Fatal("the direct outbox applies coordinator writes: want the writers to apply them")
	}
	job := queue.WebhookDeliveryJob(queue.WebhookDeliveryArgs{TenantRef: queue.RefOf(org.Tenant), DeliveryID: 424242, EndpointID: 1})
	job.InsertOpts.ScheduledAt = time.Now().Add(time.Hour)
	countIn := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) (jobs, rows int) {
		if err := q.QueryRow(ctx, `SELECT count(*) FROM river.river_job
			WHERE kind = 'webhook_delivery' AND (args ->> 'delivery_id')::bigint = 424242`).Scan(&jobs); err != nil {
			t.Fatal(err)
		}
		if err := q.QueryRow(ctx, `SELECT count(*) FROM `+org.Tenant.Table("job_outbox")).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		return jobs, rows
	}
	rolledBack := errors.New("roll back")
	if err := db.BeginFunc(ctx, e.App.DB.Pool, func(tx pgx.Tx) error {
		if _, err := e.App.Outbox.InsertManyFastTx(ctx, tx, []river.InsertManyParams{job}); err != nil {
			return err
		}
		if jobs, rows := countIn(tx); jobs != 1 || rows != 0 {
			t.Fatalf("in the writer's transaction: %d River jobs, %d outbox rows; want 1, 0", jobs, rows)
		}
		return rolledBack
	}); !errors.Is(err, rolledBack) {
		t.Fatal(err)
	}
	if jobs, rows := countIn(e.App.DB.Pool); jobs != 0 || rows != 0 {
		t.Fatalf("after the rollback: %d River jobs, %d outbox rows; want none", jobs, rows)
	}

	sid := e.activeSender(org, phoneN(1))
	e.recipient(phoneN(10))
	m := accepted(t, e.send(org, text(sid, phoneN(10), "direct")))
	if all, _ := e.deliveryJobs(org, m.ID); all != 1 {
		t.Fatalf("message %d has %d delivery jobs at its 202: want 1, inserted in its transaction", m.ID, all)
	}
	e.waitStatus(org, m.ID, "delivered", 30*time.Second)
}

// Jobs whose process ended before it moved them are moved by the next
// process's sweep (at its start): nothing accepted is lost across a
// restart, and the send's transaction wrote no River job.
func TestJobOutboxSurvivesRestart(t *testing.T) {
	t.Parallel()
	held := errors.New("this process no longer moves")
	var holding atomic.Bool
	first := startMsg(t, Options{Workers: true, OutboxOnOneServer: true, Outbox: joboutbox.Config{
		BeforeInsert: func(context.Context, db.Tenant, int) error {
			if holding.Load() {
				return held
			}
			return nil
		},
	}})
	org := first.Register(t)
	// The sender number's OTP job and directory entry are moved at once;
	// the sends' jobs are not.
	sid := first.activeSender(org, phoneN(1))
	first.recipient(phoneN(10))
	holding.Store(true)
	const n = 3
	ids := make([]int64, n)
	for i := range n {
		ids[i] = accepted(t, first.send(org, text(sid, phoneN(10), fmt.Sprintf("restart %d", i)))).ID
	}
	if rows := first.outboxRows(org); rows != n {
		t.Fatalf("the job outbox holds %d rows for %d sends", rows, n)
	}
	for _, id := range ids {
		if all, _ := first.deliveryJobs(org, id); all != 0 {
			t.Fatalf("message %d has %d River jobs before any move", id, all)
		}
	}
	first.Stop()

	// The second process is direct, as every process on one server is
	// (OutboxOnOneServer unset): its sweep still moves the rows a process
	// with the outbox left.
	second := &msgEnv{Env: Start(t, Options{Workers: true, DatabaseURL: first.DatabaseURL}), t: t, net: first.net}
	second.waitCounts(org, 30*time.Second, "every message delivered after the restart",
		func(c map[string]int) bool { return c["delivered"] == n })
	if got := second.networkMessages(org); got != n {
		t.Fatalf("the network holds %d messages for %d accepted", got, n)
	}
	for _, id := range ids {
		if all, _ := second.deliveryJobs(org, id); all != 1 {
			t.Fatalf("message %d has %d delivery jobs, want 1", id, all)
		}
	}
	if rows := second.outboxRows(org); rows != 0 {
		t.Fatalf("the job outbox holds %d rows", rows)
	}
}

// A sender number's coordinator writes (its directory entry, an
// operator's audit entry) are an outbox row that a move applies on the
// coordinator (docs/scaling.md, §Jobs). A move that dies after applying
// it and before the row's delete leaves the row, and the next applies it
// again: one directory entry and one audit entry stay. A late application
// of that row after a later change (a move that held it while another
// applied the change) does not take the directory back.
func TestJobOutboxCentralWritesApplyOnce(t *testing.T) {
	t.Parallel()
	e, failing, failed := startDyingMover(t)
	ctx := context.Background()
	org := e.Register(t)
	p := phoneN(1)
	sid := e.activeSender(org, p)
	target := senders.AdminTarget{Phone: p, OrgID: org.Tenant.OrgID}

	failing.Store(true)
	if _, err := e.App.Senders.Suspend(ctx, target); err != nil {
		t.Fatal(err)
	}
	var row []byte
	if err := e.App.DB.Pool.QueryRow(ctx, `SELECT args::text FROM `+org.Tenant.Table("job_outbox")+` WHERE kind = $1`,
		senders.KindCentral).Scan(&row); err != nil || failed.Load() == 0 {
		t.Fatalf("the suspension's outbox row: %v, %d failed moves; want the row left by a move that died", err, failed.Load())
	}
	// The row is applied again by the next move that does not die: this
	// one, or the process's mover woken by another write of the tenant.
	failing.Store(false)
	if _, err := e.App.Outbox.Move(ctx, org.Tenant); err != nil {
		t.Fatal(err)
	}
	poll(t, 10*time.Second, func() (bool, string) {
		rows := e.outboxRows(org)
		return rows == 0, fmt.Sprintf("the job outbox holds %d rows; want the row applied again", rows)
	})
	state := func() (entries int, status string, audits int) {
		t.Helper()
		if err := e.App.DB.Pool.QueryRow(ctx, `SELECT count(*), coalesce(min(status), '')
			FROM central.sender_number_directory WHERE organization_id = $1 AND sender_id = $2`,
			org.Tenant.OrgID, sid).Scan(&entries, &status); err != nil {
			t.Fatal(err)
		}
		if err := e.App.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM central.audit_log
			WHERE organization_id = $1 AND action = 'sender.suspend' AND target = $2`,
			org.Tenant.OrgID, fmt.Sprintf("sender_number:%d", sid)).Scan(&audits); err != nil {
			t.Fatal(err)
		}
		return entries, status, audits
	}
	if entries, status, audits := state(); entries != 1 || status != "suspended" || audits != 1 {
		t.Fatalf("after the row was applied twice: %d directory entries (%s), %d audit entries; want 1 suspended, 1",
			entries, status, audits)
	}

	if _, err := e.App.Senders.Unsuspend(ctx, target); err != nil {
		t.Fatal(err)
	}
	central, err := senders.NewCentral()
	if err != nil {
		t.Fatal(err)
	}
	if err := pgx.BeginFunc(ctx, e.App.DB.Pool, func(tx pgx.Tx) error {
		return central.Apply(ctx, tx, org.Tenant, row)
	}); err != nil {
		t.Fatal(err)
	}
	if entries, status, audits := state(); entries != 1 || status != "active" || audits != 1 {
		t.Fatalf("after the suspension's row was applied late: %d directory entries (%s), %d suspensions audited; want 1 active, 1",
			entries, status, audits)
	}
	if rows := e.outboxRows(org); rows != 0 {
		t.Fatalf("the job outbox holds %d rows", rows)
	}
}

// startDyingMover starts an environment whose job outbox moves fail after
// their coordinator transaction committed and before the outbox rows'
// delete, as a mover that dies there, while failing holds; failed counts
// those moves.
func startDyingMover(t *testing.T) (e *msgEnv, failing *atomic.Bool, failed *atomic.Int32) {
	t.Helper()
	failing, failed = new(atomic.Bool), new(atomic.Int32)
	e = startMsg(t, Options{Workers: true, OutboxOnOneServer: true, Outbox: joboutbox.Config{
		AfterInsert: func(context.Context, db.Tenant, int) error {
			if failing.Load() {
				failed.Add(1)
				return errors.New("the mover died after the coordinator's commit")
			}
			return nil
		},
	}})
	return e, failing, failed
}

// A write of more jobs than one insert takes (1,000 rows) is written in
// chunks, all in the writer's transaction, and each job moved once.
func TestJobOutboxWritesInChunks(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true, OutboxOnOneServer: true})
	ctx := context.Background()
	org := e.Register(t)
	const n = 1001
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = queue.WebhookDeliveryJob(queue.WebhookDeliveryArgs{TenantRef: queue.RefOf(org.Tenant), DeliveryID: int64(500000 + i), EndpointID: 1})
		params[i].InsertOpts.ScheduledAt = time.Now().Add(time.Hour)
	}
	if err := db.BeginFunc(ctx, e.App.DB.Pool, func(tx pgx.Tx) error {
		wrote, err := e.App.Outbox.InsertManyFastTx(ctx, tx, params)
		if err == nil && wrote != n {
			err = fmt.Errorf("wrote %d of %d", wrote, n)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, func() (bool, string) {
		var jobs, distinct int
		if err := e.App.DB.Pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT args ->> 'delivery_id') FROM river.river_job
			WHERE kind = 'webhook_delivery' AND args ->> 'schema' = $1`, org.Tenant.Schema).Scan(&jobs, &distinct); err != nil {
			t.Fatal(err)
		}
		rows := e.outboxRows(org)
		return jobs == n && distinct == n && rows == 0, fmt.Sprintf("%d webhook jobs (%d distinct), %d outbox rows; want %d, %d, 0", jobs, distinct, rows, n, n)
	})
}
