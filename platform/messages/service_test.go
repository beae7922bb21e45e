package messages_test

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

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/throttle"
)

var start = time.Date(2026, 11, 22, 14, 3, 5, 0, time.UTC)

// countingNetwork wraps the built-in network, counting deliveries and failing
// them while failing is set. Its deliveries are not confirmed deliveries to
// the recipient (as the HTTP network's, whose receipts come later) unless
// confirms is set (as the built-in network's own).
type countingNetwork struct {
	*builtin.Network
	confirms   atomic.Bool
	deliveries atomic.Int32
	failing    atomic.Bool
	batches    atomic.Int32 // DeliverBatch calls
	multi      atomic.Int32 // DeliverBatch calls of more than one message
	// hold, when set, holds the next DeliverBatch call until it is closed.
	hold atomic.Pointer[chan struct{}]
	// faults maps a reference to the error its deliveries get in
	// DeliverBatch instead of being delivered (a transient error, or a
	// *network.PermanentError refusal).
	faults sync.Map
	// calls records the references of each DeliverBatch call.
	callsMu sync.Mutex
	calls   [][]string
}

func (n *countingNetwork) Deliver(ctx context.Context, m network.Message) (network.Delivery, error) {
	n.deliveries.Add(1)
	if n.failing.Load() {
		return network.Delivery{}, errors.New("network: timeout")
	}
	d, err := n.Network.Deliver(ctx, m)
	d.Delivered = d.Delivered && n.confirms.Load()
	return d, err
}

// DeliverBatch counts and fails like Deliver, else delivers through the
// built-in network's batch.
func (n *countingNetwork) DeliverBatch(ctx context.Context, ms []network.Message) []network.Result {
	n.deliveries.Add(int32(len(ms)))
	n.batches.Add(1)
	if len(ms) > 1 {
		n.multi.Add(1)
	}
	if hold := n.hold.Swap(nil); hold != nil {
		<-*hold
	}
	refs := make([]string, len(ms))
	for i, m := range ms {
		refs[i] = m.Reference
	}
	n.callsMu.Lock()
	n.calls = append(n.calls, refs)
	n.callsMu.Unlock()
	if n.failing.Load() {
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
		if err, ok := n.faults.Load(m.Reference); ok {
			out[i].Err = err.(error)
			continue
		}
		deliver, at = append(deliver, m), append(at, i)
	}
	for j, r := range n.Network.DeliverBatch(ctx, deliver) {
		r.Delivery.Delivered = r.Delivery.Delivered && n.confirms.Load()
		out[at[j]] = r
	}
	return out
}

// wallClock is the throttle's settable time source.
type wallClock struct {
	mu sync.Mutex
	t  time.Time
}

func (w *wallClock) Now() time.Time { w.mu.Lock(); defer w.mu.Unlock(); return w.t }
func (w *wallClock) Advance(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t = w.t.Add(d)
}

type fixture struct {
	t     *testing.T
	db    *db.DB
	net   *countingNetwork
	clock *clock.Fake
	wall  *wallClock
	svc   *messages.Service
	mig   *migrate.Migrator
	// batches counts the acceptance statements that stored several
	// messages at once (acceptBatchSQL, recognised by its first step).
	batches *atomic.Int32
}

func newFixture(t *testing.T, rate float64, burst int) *fixture {
	t.Helper()
	return newFixtureWith(t, rate, burst, nil)
}

// newFixtureWith is newFixture with edit applied to the service's config.
func newFixtureWith(t *testing.T, rate float64, burst int, edit func(*messages.Config)) *fixture {
	t.Helper()
	d, _ := dbtest.Migrated(t)
	clk := clock.NewFake(start)
	net := &countingNetwork{Network: builtin.New(d, builtin.Config{Clock: clk})}
	ins, err := queue.NewClient(d.Pool, nil, nil, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	snd, err := senders.New(senders.Config{DB: d, Jobs: ins, Network: net, Clock: clk, Logger: quiet,
		Secret: []byte(strings.Repeat("s", 32))})
	if err != nil {
		t.Fatal(err)
	}
	wall := &wallClock{t: start}
	batches := &atomic.Int32{}
	countBatches := func(query string, err error) {
		if err == nil && strings.HasPrefix(query, "WITH i AS (") && strings.Contains(query, "INSERT INTO \"tenant_") {
			batches.Add(1)
		}
	}
	cfg := messages.Config{
		DB: d, Prepared: db.NewPrepared(d, db.PreparedConfig{Observe: countBatches}), Jobs: ins, Senders: snd, Network: net, Clock: clk, Logger: quiet,
		Throttle:   throttle.NewLocal(throttle.Config{Now: wall.Now}),
		SenderRate: rate, SenderBurst: burst,
		// Never wait in the test: any delay snoozes.
		MaxInlineWait: time.Nanosecond,
		// A job that waits for an earlier message of its conversation
		// snoozes briefly (deliverDone runs it again as River would).
		OrderWait: time.Millisecond,
	}
	if edit != nil {
		edit(&cfg)
	}
	svc, err := messages.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mig, err := migrate.New(d.Pool, migrate.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, db: d, net: net, clock: clk, wall: wall, svc: svc, mig: mig, batches: batches}
}

// org creates an organization with its tenant schema.
func (f *fixture) org() db.Tenant {
	f.t.Helper()
	ctx := context.Background()
	var id int64
	if err := f.db.Pool.QueryRow(ctx, `INSERT INTO central.organizations (name) VALUES ('org') RETURNING id`).Scan(&id); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.db.Pool.Exec(ctx, `UPDATE central.organizations SET schema_name = $2 WHERE id = $1`, id, db.SchemaFor(id)); err != nil {
		f.t.Fatal(err)
	}
	tn, err := db.NewTenant(id, db.SchemaFor(id))
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.mig.Tenant(ctx, tn); err != nil {
		f.t.Fatal(err)
	}
	return tn
}

// sender stores an active sender number (with its network account) directly.
func (f *fixture) sender(tn db.Tenant, p string) int64 {
	f.t.Helper()
	f.account(p)
	var id int64
	if err := f.db.Pool.QueryRow(context.Background(), fmt.Sprintf(`INSERT INTO %s
		(phone, status, verification_status, verified_at, activated_at) VALUES ($1, 'active', 'verified', $2, $2) RETURNING id`,
		tn.Table("sender_numbers")), p, start).Scan(&id); err != nil {
		f.t.Fatal(err)
	}
	return id
}

func (f *fixture) account(p string) {
	f.t.Helper()
	if _, err := f.net.AddAccount(context.Background(), builtin.AccountSpec{
		Phone: p, Verified: true, PhoneVerified: true, ReceivingEnabled: true}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) send(tn db.Tenant, body string, key string) (messages.SendResult, error) {
	f.t.Helper()
	var r messages.SendRequest
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		f.t.Fatal(err)
	}
	r.IdempotencyKey = key
	return f.svc.Send(context.Background(), tn, &r)
}

func (f *fixture) mustSend(tn db.Tenant, sid int64, to, content string) int64 {
	f.t.Helper()
	res, err := f.send(tn, fmt.Sprintf(`{"sender_number_id":%d,"to_phone":%q,"type":"text","content":%q}`, sid, to, content), "")
	if err != nil {
		f.t.Fatalf("send: %v", err)
	}
	return res.MessageID
}

// deliver runs message id's delivery as attempt of jobID, with the args of
// the message's delivery job as the send path enqueued them (only the
// message's id when there is no such job).
func (f *fixture) deliver(tn db.Tenant, id, jobID int64, attempt int) (time.Duration, error) {
	f.t.Helper()
	args := queue.DeliverArgs{OrgID: tn.OrgID, Schema: tn.Schema, MessageID: id}
	var raw []byte
	err := f.db.Pool.QueryRow(context.Background(), `SELECT args FROM river.river_job
		WHERE kind = 'message_delivery' AND args->>'schema' = $1 AND (args->>'message_id')::bigint = $2`,
		tn.Schema, id).Scan(&raw)
	switch {
	case err == nil:
		if err := json.Unmarshal(raw, &args); err != nil {
			f.t.Fatal(err)
		}
	case !errors.Is(err, pgx.ErrNoRows):
		f.t.Fatal(err)
	}
	return f.deliverArgs(args, jobID, attempt)
}

// deliverDone runs the job of message id as River would: again after each
// snooze (a wait for an earlier message of its conversation), until it is
// done or fails.
func (f *fixture) deliverDone(tn db.Tenant, id, jobID int64, attempt int) error {
	f.t.Helper()
	for range 10_000 {
		d, err := f.deliver(tn, id, jobID, attempt)
		if err != nil || d == 0 {
			return err
		}
		time.Sleep(d) // the snooze
	}
	return fmt.Errorf("message %d: its job snoozed 10,000 times", id)
}

func (f *fixture) deliverArgs(args queue.DeliverArgs, jobID int64, attempt int) (time.Duration, error) {
	return f.svc.DeliverMessage(context.Background(), args,
		queue.DeliveryAttempt{JobID: jobID, Attempt: attempt, MaxAttempts: 5})
}

// get reads message id as GET /messages/{id} does, without its delivery
// job's state (tests of that read it themselves).
func (f *fixture) get(tn db.Tenant, id int64) messages.Message {
	f.t.Helper()
	m, err := f.svc.Get(context.Background(), tn, id)
	if err != nil {
		f.t.Fatal(err)
	}
	m.Delivery = nil
	return m
}

func (f *fixture) networkCount() int {
	f.t.Helper()
	var n int
	if err := f.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM network.messages`).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

func ph(i int) string { return fmt.Sprintf("+1415555%04d", i) }

// A worker that died after the network took the message but before the
// outcome was recorded: the rerun gets the first delivery back, records it,
// and the network holds the message once.
func TestDeliverAfterCrashBetweenNetworkAndRecord(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 20, 40)
	tn := f.org()
	sid := f.sender(tn, ph(1))
	f.account(ph(2))
	id := f.mustSend(tn, sid, ph(2), "once")

	// The first run's network call, whose result was lost with the worker.
	first, err := f.net.Network.Deliver(context.Background(), network.Message{
		Reference: messages.Reference(tn, id), FromPhone: ph(1), ToPhone: ph(2), Type: "text", Content: "once"})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := f.deliver(tn, id, 1, 2); err != nil || d != 0 {
		t.Fatalf("rerun: %v %v", d, err)
	}
	m := f.get(tn, id)
	if m.Status != messages.StatusSent || *m.NetworkMessageID != first.MessageID || *m.ConversationID != first.ConversationID {
		t.Fatalf("message %+v, want sent as network message %d", m, first.MessageID)
	}
	if n := f.networkCount(); n != 1 {
		t.Fatalf("network holds %d messages, want 1", n)
	}
	// Another run of the finished job does nothing at all.
	before := f.net.deliveries.Load()
	if _, err := f.deliver(tn, id, 1, 3); err != nil {
		t.Fatal(err)
	}
	if f.net.deliveries.Load() != before {
		t.Fatal("a finished message was delivered again")
	}
}

// Over the rate, a job snoozes for exactly its token's delay and, run again,
// uses the token it reserved.
func TestDeliverSnoozesForItsToken(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, 1)
	tn := f.org()
	sid := f.sender(tn, ph(1))
	// Three recipients: the messages of one conversation would wait for
	// each other, not for tokens.
	for _, p := range []string{ph(2), ph(3), ph(4)} {
		f.account(p)
	}
	a := f.mustSend(tn, sid, ph(2), "a")
	b := f.mustSend(tn, sid, ph(3), "b")
	c := f.mustSend(tn, sid, ph(4), "c")
	if d, err := f.deliver(tn, a, 10, 1); d != 0 || err != nil {
		t.Fatalf("a: %v %v", d, err)
	}
	if d, err := f.deliver(tn, b, 11, 1); d != 500*time.Millisecond || err != nil {
		t.Fatalf("b: snooze %v %v, want 500ms", d, err)
	}
	if d, err := f.deliver(tn, c, 12, 1); d != time.Second || err != nil {
		t.Fatalf("c: snooze %v %v, want 1s", d, err)
	}
	f.wall.Advance(500 * time.Millisecond)
	if d, err := f.deliver(tn, b, 11, 1); d != 0 || err != nil {
		t.Fatalf("b again: %v %v", d, err)
	}
	if d, err := f.deliver(tn, c, 12, 1); d != 500*time.Millisecond || err != nil {
		t.Fatalf("c early: %v %v, want the rest of its delay", d, err)
	}
	if got := f.get(tn, b).Status; got != messages.StatusSent {
		t.Fatalf("b is %s", got)
	}
	if got := f.get(tn, c).Status; got != messages.StatusQueued {
		t.Fatalf("c is %s before its token", got)
	}
}

// Transient failures are retried; the last attempt fails the message.
func TestDeliverTransientFailures(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 100, 100)
	tn := f.org()
	sid := f.sender(tn, ph(1))
	f.account(ph(2))
	id := f.mustSend(tn, sid, ph(2), "x")
	f.net.failing.Store(true)
	if _, err := f.deliver(tn, id, 1, 1); err == nil || network.IsPermanent(err) {
		t.Fatalf("attempt 1: %v, want a transient error", err)
	}
	if got := f.get(tn, id).Status; got != messages.StatusQueued {
		t.Fatalf("after a transient failure: %s", got)
	}
	// The last attempt fails the message and still reports the network's
	// error, so that River discards the job with its cause in its errors.
	if _, err := f.deliver(tn, id, 1, 5); !network.IsTransient(err) {
		t.Fatalf("last attempt: %v, want the network's transient error", err)
	}
	m := f.get(tn, id)
	if m.Status != messages.StatusFailed || *m.ErrorCode != messages.CodeNetworkError || m.FailedAt == nil {
		t.Fatalf("after the last attempt: %+v", m)
	}
	if n := f.networkCount(); n != 0 {
		t.Fatalf("network holds %d", n)
	}
}

// A message claimed under its sender's daily limit whose delivery failed
// transiently is not counted again on the retry: with a limit of one, the
// retry delivers it instead of failing it daily_limit_exceeded, and the day's
// dispatched counter stays at one.
func TestDeliverRetryClaimsOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 100, 100)
	tn := f.org()
	sid := f.sender(tn, ph(1))
	f.account(ph(2))
	id := f.mustSend(tn, sid, ph(2), "x")
	ctx := context.Background()
	if _, err := f.db.Pool.Exec(ctx, fmt.Sprintf(`UPDATE %s SET daily_limit_override = 1`, tn.Table("sender_numbers"))); err != nil {
		t.Fatal(err)
	}
	dispatched := func() int {
		var n int
		if err := f.db.Pool.QueryRow(ctx, fmt.Sprintf(`SELECT dispatched FROM %s WHERE sender_number_id = $1 AND side = 'deliver'`,
			tn.Table("daily_usage")), sid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	f.net.failing.Store(true)
	if _, err := f.deliver(tn, id, 1, 1); err == nil || network.IsPermanent(err) {
		t.Fatalf("attempt 1: %v, want a transient error", err)
	}
	if n := dispatched(); n != 1 {
		t.Fatalf("dispatched after the first attempt = %d, want 1", n)
	}
	f.net.failing.Store(false)
	if _, err := f.deliver(tn, id, 1, 2); err != nil {
		t.Fatalf("attempt 2: %v", err)
	}
	if m := f.get(tn, id); m.Status != messages.StatusSent {
		t.Fatalf("after the retry: %+v, want sent", m)
	}
	if n := dispatched(); n != 1 {
		t.Fatalf("dispatched after the retry = %d, want 1", n)
	}
}

// A sender suspended after acceptance: its queued messages fail undelivered.
func TestDeliverSenderSuspended(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 100, 100)
	tn := f.org()
	sid := f.sender(tn, ph(1))
	f.account(ph(2))
	id := f.mustSend(tn, sid, ph(2), "x")
	if _, err := f.db.Pool.Exec(context.Background(), fmt.Sprintf(`UPDATE %s SET status = 'suspended'`, tn.Table("sender_numbers"))); err != nil {
		t.Fatal(err)
	}
	if _, err := f.deliver(tn, id, 1, 1); err != nil {
		t.Fatal(err)
	}
	m := f.get(tn, id)
	if m.Status != messages.StatusFailed || *m.ErrorCode != messages.CodeSenderNotActive {
		t.Fatalf("%+v", m)
	}
	if f.net.deliveries.Load() != 0 {
		t.Fatal("delivered for a suspended sender")
	}
}

// Once a sender's first delivery has taught the process its throttle limit,
// its later deliveries take their token first and then lock, check and claim
// in one statement: that path fails a message of a sender suspended since,
// or over a limit lowered since, exactly as the first delivery would, and a
// job enqueued without a sender id (before the id was added) still delivers.
func TestDeliverKnownSender(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change string // SQL on the tenant's sender_numbers, %s is the table
		legacy bool   // deliver the second message without the job's sender id
		status string
		code   string
	}{
		{name: "sends", status: messages.StatusSent},
		{name: "job without sender id", legacy: true, status: messages.StatusSent},
		{name: "suspended since", change: `UPDATE %s SET status = 'suspended'`,
			status: messages.StatusFailed, code: messages.CodeSenderNotActive},
		{name: "limit lowered since", change: `UPDATE %s SET daily_limit_override = 1`,
			status: messages.StatusFailed, code: messages.CodeDailyLimitExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 100, 100)
			tn := f.org()
			sid := f.sender(tn, ph(1))
			f.account(ph(2))
			first, second := f.mustSend(tn, sid, ph(2), "a"), f.mustSend(tn, sid, ph(2), "b")
			if _, err := f.deliver(tn, first, 1, 1); err != nil {
				t.Fatal(err)
			}
			if tc.change != "" {
				if _, err := f.db.Pool.Exec(context.Background(), fmt.Sprintf(tc.change, tn.Table("sender_numbers"))); err != nil {
					t.Fatal(err)
				}
			}
			var err error
			if tc.legacy {
				_, err = f.deliverArgs(queue.DeliverArgs{OrgID: tn.OrgID, Schema: tn.Schema, MessageID: second}, 2, 1)
			} else {
				_, err = f.deliver(tn, second, 2, 1)
			}
			if err != nil {
				t.Fatal(err)
			}
			m := f.get(tn, second)
			if m.Status != tc.status || (tc.code != "" && (m.ErrorCode == nil || *m.ErrorCode != tc.code)) {
				t.Fatalf("second message %+v, want %s %s", m, tc.status, tc.code)
			}
			want := int32(1)
			if tc.status == messages.StatusSent {
				want = 2
			}
			if got := f.net.deliveries.Load(); got != want {
				t.Fatalf("network deliveries %d, want %d", got, want)
			}
			// Run again (a retried job): nothing changes.
			if _, err := f.deliver(tn, second, 2, 2); err != nil {
				t.Fatal(err)
			}
			if got := f.net.deliveries.Load(); got != want {
				t.Fatalf("a rerun delivered again: %d", got)
			}
		})
	}
}

// A sender this process has already sent from (its phone remembered, so the
// send goes straight to the lookup and the acceptance statement) gets the
// sender errors of docs/api.md like any other: a state that may not send is
// 422 sender_not_active (sender_owner_unverified, with its Arabic message, while
// the owner is unverified), before recipient_unreachable; a sender_phone
// naming another number than sender_number_id is refused on that field; and
// nothing is stored.
func TestSendSenderErrorsOnceKnown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status string
		code   string
	}{
		{"suspended", senders.CodeSenderNotActive},
		{"rejected", senders.CodeSenderNotActive},
		{"pending_verification", senders.CodeSenderNotActive},
		{"pending_account_verification", senders.CodeSenderOwnerUnverified},
	} {
		t.Run(tc.status, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 100, 100)
			tn := f.org()
			sid := f.sender(tn, ph(1))
			other := f.sender(tn, ph(3))
			f.account(ph(2))
			f.mustSend(tn, sid, ph(2), "first") // the process now knows the sender's phone

			mismatch := fmt.Sprintf(`{"sender_number_id":%d,"sender_phone":%q,"to_phone":%q,"type":"text","content":"x"}`, other, ph(1), ph(2))
			_, err := f.send(tn, mismatch, "")
			if e, ok := apperr.As(err); !ok || e.Code != "validation_failed" || len(e.Fields["sender_phone"]) == 0 {
				t.Fatalf("id and phone of different numbers: %v, want validation_failed on sender_phone", err)
			}

			if _, err := f.db.Pool.Exec(context.Background(),
				fmt.Sprintf(`UPDATE %s SET status = $1 WHERE id = $2`, tn.Table("sender_numbers")), tc.status, sid); err != nil {
				t.Fatal(err)
			}
			for _, to := range []string{ph(2), ph(99)} { // reachable, and not on the network
				_, err := f.send(tn, fmt.Sprintf(`{"sender_number_id":%d,"to_phone":%q,"type":"text","content":"x"}`, sid, to), "")
				e, ok := apperr.As(err)
				if !ok || e.Code != tc.code || e.Kind != apperr.KindInvalid {
					t.Fatalf("send to %s: %v, want 422 %s", to, err, tc.code)
				}
				if tc.code == senders.CodeSenderOwnerUnverified && e.Message != senders.MessageOwnerUnverified {
					t.Fatalf("message %q", e.Message)
				}
			}
			var stored int
			if err := f.db.Pool.QueryRow(context.Background(),
				fmt.Sprintf(`SELECT (SELECT count(*) FROM %s) + (SELECT used FROM %s WHERE sender_number_id = $1 AND side = 'accept')`,
					tn.Table("messages"), tn.Table("daily_usage")), sid).Scan(&stored); err != nil {
				t.Fatal(err)
			}
			if stored != 2 { // the first message, counted once
				t.Fatalf("messages + day's count = %d, want 2: a refused send stored something", stored)
			}
		})
	}
}

// A job for a message that does not exist is unusable (permanent).
func TestDeliverUnknownMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 100, 100)
	tn := f.org()
	if _, err := f.deliver(tn, 12345, 1, 1); !network.IsPermanent(err) {
		t.Fatalf("unknown message: %v", err)
	}
	if _, err := f.svc.DeliverMessage(context.Background(), queue.DeliverArgs{OrgID: tn.OrgID, Schema: "public", MessageID: 1},
		queue.DeliveryAttempt{Attempt: 1, MaxAttempts: 1}); !network.IsPermanent(err) {
		t.Fatalf("bad schema: %v", err)
	}
}

// Concurrent sends never pass the daily limit, and the limit is per UTC day.
func TestDailyLimitReservation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 100, 100)
	tn := f.org()
	if _, err := f.db.Pool.Exec(context.Background(), `UPDATE central.organizations SET default_daily_limit = 7 WHERE id = $1`, tn.OrgID); err != nil {
		t.Fatal(err)
	}
	sid := f.sender(tn, ph(1))
	f.account(ph(2))
	var ok, limited atomic.Int32
	var wg sync.WaitGroup
	for range 30 {
		wg.Go(func() {
			_, err := f.send(tn, fmt.Sprintf(`{"sender_number_id":%d,"to_phone":%q,"type":"text","content":"x"}`, sid, ph(2)), "")
			switch e, isApp := apperr.As(err); {
			case err == nil:
				ok.Add(1)
			case isApp && e.Code == messages.CodeDailyLimitExceeded:
				limited.Add(1)
				if want := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC).Sub(start); e.RetryAfter != want {
					t.Errorf("RetryAfter %s, want %s", e.RetryAfter, want)
				}
			default:
				t.Errorf("send: %v", err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 7 || limited.Load() != 23 {
		t.Fatalf("%d accepted, %d limited; want 7 and 23", ok.Load(), limited.Load())
	}
	f.clock.Set(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC))
	f.mustSend(tn, sid, ph(2), "tomorrow")
}

// Acceptance and delivery count a sender's day in rows of their own
// ('accept' and 'deliver' in daily_usage), so neither waits on the other's
// row lock, which each holds until its commit: a send goes through while a
// transaction holds the day's delivery row, and the delivery of that send
// while one holds the acceptance row.
func TestAcceptanceAndDeliveryLockApart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 100, 100)
	tn := f.org()
	sid := f.sender(tn, ph(1))
	f.account(ph(2))
	if _, err := f.deliver(tn, f.mustSend(tn, sid, ph(2), "first"), 1, 1); err != nil {
		t.Fatal(err)
	}
	// holding runs fn while another transaction holds the day's side row.
	holding := func(side string, fn func(ctx context.Context) error) {
		t.Helper()
		ctx := context.Background()
		tx, err := f.db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck // only a lock to release
		tag, err := tx.Exec(ctx, fmt.Sprintf(`SELECT 1 FROM %s WHERE sender_number_id = $1 AND day = $2::date AND side = $3 FOR UPDATE`,
			tn.Table("daily_usage")), sid, start.Format(time.DateOnly), side)
		if err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("lock the %s row: %v, %d rows", side, err, tag.RowsAffected())
		}
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if err := fn(ctx); err != nil {
			t.Fatalf("with the %s row held: %v", side, err)
		}
	}
	var id int64
	holding("deliver", func(ctx context.Context) error {
		var r messages.SendRequest
		if err := json.Unmarshal(fmt.Appendf(nil, `{"sender_number_id":%d,"to_phone":%q,"type":"text","content":"second"}`, sid, ph(2)), &r); err != nil {
			return err
		}
		res, err := f.svc.Send(ctx, tn, &r)
		id = res.MessageID
		return err
	})
	holding("accept", func(ctx context.Context) error {
		_, err := f.svc.DeliverMessage(ctx, queue.DeliverArgs{OrgID: tn.OrgID, Schema: tn.Schema, MessageID: id},
			queue.DeliveryAttempt{JobID: 2, Attempt: 1, MaxAttempts: 5})
		return err
	})
	if m := f.get(tn, id); m.Status != messages.StatusSent {
		t.Fatalf("second message %+v, want sent", m)
	}
}

// A send with an Idempotency-Key is accepted in a transaction, by the same
// statement as any other; its refusals are worded from that statement's row
// as a lone send's: 429 daily_limit_exceeded with Retry-After up to the next
// UTC midnight and the limit in the details (docs/api.md, §Sending),
// sender_not_active for a suspended sender, and nothing stored.
func TestKeyedSendRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 100, 100)
	tn := f.org()
	capped, suspended := f.sender(tn, ph(1)), f.sender(tn, ph(2))
	f.account(ph(10))
	ctx := context.Background()
	if _, err := f.db.Pool.Exec(ctx, fmt.Sprintf(`UPDATE %s SET daily_limit_override = 1 WHERE id = $1`,
		tn.Table("sender_numbers")), capped); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Pool.Exec(ctx, fmt.Sprintf(`UPDATE %s SET status = 'suspended' WHERE id = $1`,
		tn.Table("sender_numbers")), suspended); err != nil {
		t.Fatal(err)
	}
	body := func(sid int64, content string) string {
		return fmt.Sprintf(`{"sender_number_id":%d,"to_phone":%q,"type":"text","content":%q}`, sid, ph(10), content)
	}
	if _, err := f.send(tn, body(capped, "first"), "k-first"); err != nil {
		t.Fatal(err)
	}

	midnight := time.Date(start.Year(), start.Month(), start.Day()+1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		sid  int64
		code string
		kind apperr.Kind // 429 and 422
	}{
		{"over the daily limit", capped, messages.CodeDailyLimitExceeded, apperr.KindRateLimited},
		{"suspended sender", suspended, "sender_not_active", apperr.KindInvalid},
	}
	for _, tt := range tests {
		_, err := f.send(tn, body(tt.sid, tt.name), "k-"+tt.name)
		e, ok := apperr.As(err)
		if !ok || e.Code != tt.code || e.Kind != tt.kind {
			t.Fatalf("%s: %v, want %s %s", tt.name, err, tt.kind, tt.code)
		}
		if tt.code == messages.CodeDailyLimitExceeded && (e.RetryAfter != midnight.Sub(start) || e.Details["daily_limit"] != 1) {
			t.Errorf("%s: retry after %s, details %v; want %s and daily_limit 1", tt.name, e.RetryAfter, e.Details, midnight.Sub(start))
		}
	}
	var n int
	if err := f.db.Pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s`, tn.Table("messages"))).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d messages stored, want 1 (refusals store nothing)", n)
	}
}

// Idempotency keys older than the TTL are purged, and a stale key that is
// still stored is taken over by a new send.
func TestIdempotencyKeyLifetime(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 100, 100)
	tn := f.org()
	sid := f.sender(tn, ph(1))
	f.account(ph(2))
	body := fmt.Sprintf(`{"sender_number_id":%d,"to_phone":%q,"type":"text","content":"x"}`, sid, ph(2))
	first, err := f.send(tn, body, "k1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.send(tn, body, "k2"); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(25 * time.Hour)
	again, err := f.send(tn, body, "k1")
	if err != nil || again.Replayed || again.MessageID == first.MessageID {
		t.Fatalf("stale key: %+v %v", again, err)
	}
	n, err := messages.PurgeIdempotencyKeys(context.Background(), f.db, tn, f.clock.Now().Add(-24*time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("purged %d (%v), want 1 (k2; k1 was renewed)", n, err)
	}
	replay, err := f.send(tn, body, "k1")
	if err != nil || !replay.Replayed || replay.MessageID != again.MessageID || string(replay.Resource) != string(again.Resource) {
		t.Fatalf("replay %+v %v", replay, err)
	}
}
