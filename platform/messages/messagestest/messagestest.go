// Package messagestest is the test bundle of a message's three stages
// (packages acceptance, delivery and messages): one database, the built-in
// network behind a counting wrapper, a fake clock, and the three services
// over one statement cache, with the helpers their tests share to send,
// deliver and read messages. Only tests import it.
package messagestest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/acceptance"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/delivery"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/network/networktest"
	"github.com/bizmsg/platform/platform/pace"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/sendrequest"
	"github.com/bizmsg/platform/platform/webhooks"
)

// Start is the fake clock's time when a bundle is set up.
var Start = time.Date(2026, 11, 22, 14, 3, 5, 0, time.UTC)

// CountingNetwork wraps the built-in network, counting deliveries and
// failing them while Failing is set. Its deliveries are not confirmed
// deliveries to the recipient (as the HTTP network's, whose receipts come
// later) unless Confirms is set (as the built-in network's own).
type CountingNetwork struct {
	*builtin.Network
	Confirms   atomic.Bool
	Deliveries atomic.Int32
	Failing    atomic.Bool
	Batches    atomic.Int32 // DeliverBatch calls
	Multi      atomic.Int32 // DeliverBatch calls of more than one message
	// Hold, when set, holds the next DeliverBatch call until it is closed.
	Hold atomic.Pointer[chan struct{}]
	// Faults maps a reference to the error its deliveries get in
	// DeliverBatch instead of being delivered (a transient error, or a
	// *network.PermanentError refusal).
	Faults sync.Map
	// Calls records the references of each DeliverBatch call.
	CallsMu sync.Mutex
	Calls   [][]string
}

// Deliver counts, and fails while Failing is set.
func (n *CountingNetwork) Deliver(ctx context.Context, m network.Message) (network.Delivery, error) {
	n.Deliveries.Add(1)
	if n.Failing.Load() {
		return network.Delivery{}, errors.New("network: timeout")
	}
	d, err := n.Network.Deliver(ctx, m)
	d.Delivered = d.Delivered && n.Confirms.Load()
	return d, err
}

// DeliverBatch counts and fails like Deliver, else delivers through the
// built-in network's batch.
func (n *CountingNetwork) DeliverBatch(ctx context.Context, ms []network.Message) []network.Result {
	n.Deliveries.Add(int32(len(ms)))
	n.Batches.Add(1)
	if len(ms) > 1 {
		n.Multi.Add(1)
	}
	if hold := n.Hold.Swap(nil); hold != nil {
		<-*hold
	}
	refs := make([]string, len(ms))
	for i, m := range ms {
		refs[i] = m.Reference
	}
	n.CallsMu.Lock()
	n.Calls = append(n.Calls, refs)
	n.CallsMu.Unlock()
	if n.Failing.Load() {
		out := make([]network.Result, len(ms))
		for i := range out {
			out[i].Err = errors.New("network: timeout")
		}
		return out
	}
	var deliver []network.Message
	var at []int
	out := make([]network.Result, len(ms))
	for i, m := range ms {
		if err, ok := n.Faults.Load(m.Reference); ok {
			out[i].Err = err.(error)
			continue
		}
		deliver, at = append(deliver, m), append(at, i)
	}
	for j, r := range n.Network.DeliverBatch(ctx, deliver) {
		r.Delivery.Delivered = r.Delivery.Delivered && n.Confirms.Load()
		out[at[j]] = r
	}
	return out
}

// WallClock is the throttle's settable time source.
type WallClock struct {
	mu sync.Mutex
	t  time.Time
}

// Now is the clock's time.
func (w *WallClock) Now() time.Time { w.mu.Lock(); defer w.mu.Unlock(); return w.t }

// Advance moves the clock on by d.
func (w *WallClock) Advance(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t = w.t.Add(d)
}

// Services are the three stages of a message, each with its own methods
// (Send; DeliverMessage, Requeue; ApplyReceipt, Receive, List, Get).
type Services struct {
	*Acceptance
	*Delivery
	*Messages
}

type (
	// Acceptance is the acceptance service, as Services embeds it.
	Acceptance = acceptance.Service
	// Delivery is the delivery service, as Services embeds it.
	Delivery = delivery.Service
	// Messages is the message service, as Services embeds it.
	Messages = messages.Service
)

// Config is the three services' configs as Setup builds them, for a test
// to change (Options.Edit).
type Config struct {
	Acceptance acceptance.Config
	Delivery   delivery.Config
	Messages   messages.Config
}

// SetEvents records the events of every stage with e.
func (c *Config) SetEvents(e webhooks.Emitter) {
	c.Delivery.Events, c.Messages.Events = e, e
}

// Fixture is one test's bundle.
type Fixture struct {
	T     *testing.T
	DB    *db.DB
	Net   *CountingNetwork
	Clock *clock.Fake
	Wall  *WallClock
	Svc   Services
	Mig   *migrate.Migrator
	// Batches counts the acceptance statements that stored several
	// messages at once (acceptance's insert_batch, recognised by its
	// column list: the one test hook that reads a statement's text, as
	// acceptance offers no other sign of a batch statement that ran).
	Batches *atomic.Int32
	// Queued are how many sends (acceptance's batcher) and deliveries
	// (delivery's) last waited for a run of their tenant's batch
	// (batch.Config.OnQueue): a test waits on them for its calls to have
	// gathered.
	SendsQueued, DeliveriesQueued *atomic.Int32
}

// Setup builds a bundle whose senders' throttle is rate and burst, with
// edit (nil: none) applied to the services' configs.
func Setup(t *testing.T, rate float64, burst int, edit func(*Config)) *Fixture {
	t.Helper()
	d, _ := dbtest.Migrated(t)
	clk := clock.NewFake(Start)
	net := &CountingNetwork{Network: networktest.Builtin(t, builtin.Config{DB: d, Clock: clk})}
	ins, err := queue.NewClient(queue.Config{Pool: d.Pool})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	snd, err := senders.New(senders.Config{DB: d, Jobs: ins, Network: net, Clock: clk, Logger: quiet,
		Secret: []byte(strings.Repeat("s", 32))})
	if err != nil {
		t.Fatal(err)
	}
	wall := &WallClock{t: Start}
	batches := &atomic.Int32{}
	countBatches := func(query string, err error) {
		if err == nil && strings.Contains(query, "(created_at, sender_number_id, to_phone, recipient_user_id") {
			batches.Add(1)
		}
	}
	prep := dbtest.Prepared(t, db.PreparedConfig{DB: d, Observe: countBatches})
	cfg := Config{
		Acceptance: acceptance.Config{Prepared: prep, Jobs: ins, Senders: snd, Network: net, Clock: clk},
		Delivery: delivery.Config{
			DB: d, Prepared: prep, Jobs: ins, Network: net, Clock: clk, Logger: quiet,
			Throttle:   pace.NewLocal(pace.LocalConfig{Now: wall.Now}),
			SenderRate: rate, SenderBurst: burst,
			// Never wait in the test: any delay snoozes.
			MaxInlineWait: time.Nanosecond,
		},
		Messages: messages.Config{DB: d, Prepared: prep, Jobs: ins, Clock: clk, Logger: quiet},
	}
	if edit != nil {
		edit(&cfg)
	}
	sendsQueued, deliveriesQueued := &atomic.Int32{}, &atomic.Int32{}
	cfg.Acceptance.Batch.OnQueue = countQueued(cfg.Acceptance.Batch.OnQueue, sendsQueued)
	cfg.Delivery.Batch.OnQueue = countQueued(cfg.Delivery.Batch.OnQueue, deliveriesQueued)
	acc, err := acceptance.New(cfg.Acceptance)
	if err != nil {
		t.Fatal(err)
	}
	dlv, err := delivery.New(cfg.Delivery)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := messages.New(cfg.Messages)
	if err != nil {
		t.Fatal(err)
	}
	svc := Services{Acceptance: acc, Delivery: dlv, Messages: msgs}
	mig, err := migrate.New(migrate.Config{Pool: d.Pool, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return &Fixture{T: t, DB: d, Net: net, Clock: clk, Wall: wall, Svc: svc, Mig: mig, Batches: batches,
		SendsQueued: sendsQueued, DeliveriesQueued: deliveriesQueued}
}

// countQueued is an OnQueue hook that keeps the count in n, and tells next
// (nil: none).
func countQueued(next func(int), n *atomic.Int32) func(int) {
	return func(waiting int) {
		n.Store(int32(waiting))
		if next != nil {
			next(waiting)
		}
	}
}

// Org creates an organization with its tenant schema.
func (f *Fixture) Org() db.Tenant {
	f.T.Helper()
	ctx := context.Background()
	var id int64
	if err := f.DB.Pool.QueryRow(ctx, `INSERT INTO central.organizations (name) VALUES ('org') RETURNING id`).Scan(&id); err != nil {
		f.T.Fatal(err)
	}
	if _, err := f.DB.Pool.Exec(ctx, `UPDATE central.organizations SET schema_name = $2 WHERE id = $1`, id, db.SchemaFor(id)); err != nil {
		f.T.Fatal(err)
	}
	tn, err := db.NewTenant(id, db.SchemaFor(id))
	if err != nil {
		f.T.Fatal(err)
	}
	if _, err := f.Mig.Tenant(ctx, tn); err != nil {
		f.T.Fatal(err)
	}
	return tn
}

// Sender stores an active sender number (with its network account) directly.
func (f *Fixture) Sender(tn db.Tenant, p string) int64 {
	f.T.Helper()
	f.Account(p)
	var id int64
	if err := f.DB.Pool.QueryRow(context.Background(), fmt.Sprintf(`INSERT INTO %s
		(phone, status, verification_status, verified_at, activated_at) VALUES ($1, 'active', 'verified', $2, $2) RETURNING id`,
		tn.Table("sender_numbers")), p, Start).Scan(&id); err != nil {
		f.T.Fatal(err)
	}
	return id
}

// Account creates a network account of phone p that can receive.
func (f *Fixture) Account(p string) {
	f.T.Helper()
	if _, err := f.Net.AddAccount(context.Background(), builtin.AccountSpec{
		Phone: p, Verified: true, PhoneVerified: true, ReceivingEnabled: true}); err != nil {
		f.T.Fatal(err)
	}
}

// Send sends body (a POST /messages body) with Idempotency-Key key ("" for
// none).
func (f *Fixture) Send(tn db.Tenant, body string, key string) (acceptance.Result, error) {
	f.T.Helper()
	var r sendrequest.SendRequest
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		f.T.Fatal(err)
	}
	r.IdempotencyKey = key
	return f.Svc.Send(context.Background(), tn, f.DailyLimit(tn), &r)
}

// DailyLimit is tn's organization's default daily limit as it is stored
// (what the API's authentication reads and hands to Send).
func (f *Fixture) DailyLimit(tn db.Tenant) int {
	f.T.Helper()
	c, err := messages.NewCounters()
	if err != nil {
		f.T.Fatal(err)
	}
	l, err := c.ReadLimits(context.Background(), f.DB.Pool, tn.OrgID)
	if err != nil {
		f.T.Fatal(err)
	}
	return l.DefaultDailyLimit
}

// MustSend sends a text message, failing the test on error, and returns its
// id.
func (f *Fixture) MustSend(tn db.Tenant, sid int64, to, content string) int64 {
	f.T.Helper()
	res, err := f.Send(tn, fmt.Sprintf(`{"sender_number_id":%d,"to_phone":%q,"type":"text","content":%q}`, sid, to, content), "")
	if err != nil {
		f.T.Fatalf("send: %v", err)
	}
	return res.MessageID
}

// Deliver runs message id's delivery as attempt of jobID, with the args of
// the message's delivery job as the send path enqueued them (only the
// message's id when there is no such job).
func (f *Fixture) Deliver(tn db.Tenant, id, jobID int64, attempt int) (time.Duration, error) {
	f.T.Helper()
	args := queue.DeliverArgs{TenantRef: queue.RefOf(tn), MessageID: id}
	var raw []byte
	err := f.DB.Pool.QueryRow(context.Background(), `SELECT args FROM river.river_job
		WHERE kind = 'message_delivery' AND args->>'schema' = $1 AND (args->>'message_id')::bigint = $2`,
		tn.Schema, id).Scan(&raw)
	switch {
	case err == nil:
		if err := json.Unmarshal(raw, &args); err != nil {
			f.T.Fatal(err)
		}
	case !errors.Is(err, pgx.ErrNoRows):
		f.T.Fatal(err)
	}
	return f.DeliverArgs(args, jobID, attempt)
}

// DeliverDone runs the job of message id as River would: again after each
// snooze (a wait for its token, or for another job's claim), until it ends
// or fails. A job that ends with its message still queued left it to the
// job carrying its conversation (docs/design.md, §Delivery order), which
// may hand it to a job of its own: FinishHandedOver runs those.
func (f *Fixture) DeliverDone(tn db.Tenant, id, jobID int64, attempt int) error {
	f.T.Helper()
	for range 10_000 {
		d, err := f.Deliver(tn, id, jobID, attempt)
		if err != nil || d == 0 {
			return err
		}
		f.snooze(tn, id, d)
	}
	return fmt.Errorf("message %d: its job snoozed 10,000 times", id)
}

// snooze is a River snooze of message id's job: it runs again after d, or
// as soon as the message leaves queued (delivered by the job that held it;
// its run then only finds it done), whichever comes first.
func (f *Fixture) snooze(tn db.Tenant, id int64, d time.Duration) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for until := time.Now().Add(d); time.Now().Before(until); <-tick.C {
		var status string
		if err := f.DB.Pool.QueryRow(context.Background(), `SELECT status FROM `+tn.Table("messages")+` WHERE id = $1`,
			id).Scan(&status); err != nil || status != messages.StatusQueued {
			return
		}
	}
}

// FinishHandedOver runs the jobs runs handed tenant tn's conversations
// over to (RunHandedOver), those they hand over in turn, and again those
// that snoozed once they are due, until none is left: what River's workers
// would do after the tests' own jobs ended.
func (f *Fixture) FinishHandedOver(tn db.Tenant) {
	f.T.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(30 * time.Second); ; <-tick.C {
		if f.RunHandedOver(tn) > 0 {
			continue
		}
		var left int
		if err := f.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM river.river_job h
			WHERE h.kind = 'message_delivery' AND h.state = 'available' AND h.args->>'schema' = $1
			  AND h.id > (SELECT min(k.id) FROM river.river_job k WHERE k.kind = h.kind
			                 AND k.args->>'schema' = $1 AND k.args->>'message_id' = h.args->>'message_id')`,
			tn.Schema).Scan(&left); err != nil {
			f.T.Fatal(err)
		}
		switch {
		case left == 0:
			return
		case time.Now().After(deadline):
			f.T.Fatalf("%d handed-over delivery jobs of %s still to run after 30 s", left, tn.Schema)
		}
	}
}

// RunHandedOver runs, once each, tenant tn's delivery jobs that a run
// handed a conversation's next message to (a message's later jobs, beyond
// the one its acceptance inserted, which tests run themselves), as River
// would: each taken by one caller (its row marked completed as it is
// taken), run as its own job, and made available again after a snooze or
// a failure (as its next attempt). It returns how many it ran.
func (f *Fixture) RunHandedOver(tn db.Tenant) int {
	f.T.Helper()
	rows, err := f.DB.Pool.Query(context.Background(), `UPDATE river.river_job j SET state = 'completed', finalized_at = now()
		WHERE j.id IN (SELECT h.id FROM river.river_job h
		  WHERE h.kind = 'message_delivery' AND h.state = 'available' AND h.scheduled_at <= now()
		    AND h.args->>'schema' = $1
		    AND h.id > (SELECT min(k.id) FROM river.river_job k WHERE k.kind = h.kind
		                   AND k.args->>'schema' = $1 AND k.args->>'message_id' = h.args->>'message_id')
		  ORDER BY h.id FOR UPDATE SKIP LOCKED)
		RETURNING j.id, greatest(j.attempt, 1), j.args`, tn.Schema)
	if err != nil {
		f.T.Fatal(err)
	}
	type job struct {
		id      int64
		attempt int
		args    queue.DeliverArgs
	}
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (job, error) {
		var j job
		var raw []byte
		if err := r.Scan(&j.id, &j.attempt, &raw); err != nil {
			return j, err
		}
		return j, json.Unmarshal(raw, &j.args)
	})
	if err != nil {
		f.T.Fatal(err)
	}
	for _, j := range jobs {
		d, err := f.DeliverArgs(j.args, j.id, j.attempt)
		attempt := j.attempt
		switch {
		case err != nil && !network.IsPermanent(err):
			// Failed: retried, as its next attempt, after a short backoff.
			f.T.Logf("handed-over job %d of message %d, attempt %d: %v", j.id, j.args.MessageID, j.attempt, err)
			d, attempt = 10*time.Millisecond, attempt+1
		case err != nil || d == 0:
			continue
		}
		// Snoozed or failed: available again once d has passed.
		if _, err := f.DB.Pool.Exec(context.Background(), `UPDATE river.river_job
			SET state = 'available', finalized_at = NULL, attempt = $3,
			    scheduled_at = now() + make_interval(secs => $2) WHERE id = $1`,
			j.id, d.Seconds(), attempt); err != nil {
			f.T.Fatal(err)
		}
	}
	return len(jobs)
}

// DeliverArgs runs the delivery job of args as attempt of jobID.
func (f *Fixture) DeliverArgs(args queue.DeliverArgs, jobID int64, attempt int) (time.Duration, error) {
	return f.Svc.DeliverMessage(context.Background(), args,
		queue.DeliveryAttempt{JobID: jobID, Attempt: attempt, MaxAttempts: 5})
}

// Get reads message id as GET /messages/{id} does, without its delivery
// job's state (tests of that read it themselves).
func (f *Fixture) Get(tn db.Tenant, id int64) messages.Message {
	f.T.Helper()
	m, err := f.Svc.Get(context.Background(), tn, id)
	if err != nil {
		f.T.Fatal(err)
	}
	m.Delivery = nil
	return m
}

// NetworkCount is how many messages the built-in network holds.
func (f *Fixture) NetworkCount() int {
	f.T.Helper()
	var n int
	if err := f.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM network.messages`).Scan(&n); err != nil {
		f.T.Fatal(err)
	}
	return n
}

// Ph is the i-th test phone number.
func Ph(i int) string { return fmt.Sprintf("+1415555%04d", i) }

// Usage is one sender's daily_usage counters of the bundle's day (Start).
type Usage struct{ Used, Sent, Delivered, Failed, Read, Received int }

// Usage reads sender sid's counters of the bundle's day.
func (f *Fixture) Usage(tn db.Tenant, sid int64) Usage {
	f.T.Helper()
	var u Usage
	if err := f.DB.Pool.QueryRow(context.Background(), fmt.Sprintf(`SELECT coalesce(sum(used), 0), coalesce(sum(sent), 0),
		       coalesce(sum(delivered), 0), coalesce(sum(failed), 0), coalesce(sum(read), 0), coalesce(sum(received), 0)
		FROM %s WHERE sender_number_id = $1 AND day = $2::date`, tn.Table("daily_usage")),
		sid, Start.Format(time.DateOnly)).Scan(&u.Used, &u.Sent, &u.Delivered, &u.Failed, &u.Read, &u.Received); err != nil {
		f.T.Fatalf("daily usage of sender %d: %v", sid, err)
	}
	return u
}

// Exec runs statements on the pool, failing the test on error.
func (f *Fixture) Exec(statements ...string) {
	f.T.Helper()
	for _, q := range statements {
		if _, err := f.DB.Pool.Exec(context.Background(), q); err != nil {
			f.T.Fatal(err)
		}
	}
}

// WaitFor polls cond for up to 5 s.
func WaitFor(t *testing.T, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(5 * time.Second); !cond(); <-tick.C {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
	}
}
