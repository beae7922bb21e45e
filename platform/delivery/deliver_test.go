package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/sendrequest"
) // A worker that died after the network took the message but before the
// outcome was recorded: the rerun gets the first delivery back, records it,
// and the network holds the message once.
func TestDeliverAfterCrashBetweenNetworkAndRecord(t *testing.T) {
	t.Parallel()
	f := setup(t, 20, 40)
	tn := f.Org()
	sid := f.Sender(tn, ph(1))
	f.Account(ph(2))
	id := f.MustSend(tn, sid, ph(2), "once")

	// The first run's network call, whose result was lost with the worker.
	first, err := f.Net.Network.Deliver(context.Background(), network.Message{
		Reference: messages.Reference(tn, id), FromPhone: ph(1), ToPhone: ph(2), Media: network.Media{Type: "text", Content: "once"}})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := f.Deliver(tn, id, 1, 2); err != nil || d != 0 {
		t.Fatalf("rerun: %v %v", d, err)
	}
	m := f.Get(tn, id)
	if m.Status != messages.StatusSent || *m.NetworkMessageID != first.MessageID || *m.ConversationID != first.ConversationID {
		t.Fatalf("message %+v, want sent as network message %d", m, first.MessageID)
	}
	if n := f.NetworkCount(); n != 1 {
		t.Fatalf("network holds %d messages, want 1", n)
	}
	// Another run of the finished job does nothing at all.
	before := f.Net.Deliveries.Load()
	if _, err := f.Deliver(tn, id, 1, 3); err != nil {
		t.Fatal(err)
	}
	if f.Net.Deliveries.Load() != before {
		t.Fatal("a finished message was delivered again")
	}
}

// Over the rate, a job snoozes for exactly its token's delay and, run again,
// uses the token it reserved.
func TestDeliverSnoozesForItsToken(t *testing.T) {
	t.Parallel()
	f := setup(t, 2, 1)
	tn := f.Org()
	sid := f.Sender(tn, ph(1))
	// Three recipients: the messages of one conversation would wait for
	// each other, not for tokens.
	for _, p := range []string{ph(2), ph(3), ph(4)} {
		f.Account(p)
	}
	a := f.MustSend(tn, sid, ph(2), "a")
	b := f.MustSend(tn, sid, ph(3), "b")
	c := f.MustSend(tn, sid, ph(4), "c")
	if d, err := f.Deliver(tn, a, 10, 1); d != 0 || err != nil {
		t.Fatalf("a: %v %v", d, err)
	}
	if d, err := f.Deliver(tn, b, 11, 1); d != 500*time.Millisecond || err != nil {
		t.Fatalf("b: snooze %v %v, want 500ms", d, err)
	}
	if d, err := f.Deliver(tn, c, 12, 1); d != time.Second || err != nil {
		t.Fatalf("c: snooze %v %v, want 1s", d, err)
	}
	f.Wall.Advance(500 * time.Millisecond)
	if d, err := f.Deliver(tn, b, 11, 1); d != 0 || err != nil {
		t.Fatalf("b again: %v %v", d, err)
	}
	if d, err := f.Deliver(tn, c, 12, 1); d != 500*time.Millisecond || err != nil {
		t.Fatalf("c early: %v %v, want the rest of its delay", d, err)
	}
	if got := f.Get(tn, b).Status; got != messages.StatusSent {
		t.Fatalf("b is %s", got)
	}
	if got := f.Get(tn, c).Status; got != messages.StatusQueued {
		t.Fatalf("c is %s before its token", got)
	}
}

// Transient failures are retried; the last attempt fails the message.
func TestDeliverTransientFailures(t *testing.T) {
	t.Parallel()
	f := setup(t, 100, 100)
	tn := f.Org()
	sid := f.Sender(tn, ph(1))
	f.Account(ph(2))
	id := f.MustSend(tn, sid, ph(2), "x")
	f.Net.Failing.Store(true)
	if _, err := f.Deliver(tn, id, 1, 1); err == nil || network.IsPermanent(err) {
		t.Fatalf("attempt 1: %v, want a transient error", err)
	}
	if got := f.Get(tn, id).Status; got != messages.StatusQueued {
		t.Fatalf("after a transient failure: %s", got)
	}
	// The last attempt fails the message and still reports the network's
	// error, so that River discards the job with its cause in its errors.
	if _, err := f.Deliver(tn, id, 1, 5); !network.IsTransient(err) {
		t.Fatalf("last attempt: %v, want the network's transient error", err)
	}
	m := f.Get(tn, id)
	if m.Status != messages.StatusFailed || *m.ErrorCode != messages.CodeNetworkError || m.FailedAt == nil {
		t.Fatalf("after the last attempt: %+v", m)
	}
	if n := f.NetworkCount(); n != 0 {
		t.Fatalf("network holds %d", n)
	}
}

// A message claimed under its sender's daily limit whose delivery failed
// transiently is not counted again on the retry: with a limit of one, the
// retry delivers it instead of failing it daily_limit_exceeded, and the day's
// dispatched counter stays at one.
func TestDeliverRetryClaimsOnce(t *testing.T) {
	t.Parallel()
	f := setup(t, 100, 100)
	tn := f.Org()
	sid := f.Sender(tn, ph(1))
	f.Account(ph(2))
	id := f.MustSend(tn, sid, ph(2), "x")
	ctx := context.Background()
	if _, err := f.DB.Pool.Exec(ctx, fmt.Sprintf(`UPDATE %s SET daily_limit_override = 1`, tn.Table("sender_numbers"))); err != nil {
		t.Fatal(err)
	}
	dispatched := func() int {
		var n int
		if err := f.DB.Pool.QueryRow(ctx, fmt.Sprintf(`SELECT dispatched FROM %s WHERE sender_number_id = $1 AND side = 'deliver'`,
			tn.Table("daily_usage")), sid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	f.Net.Failing.Store(true)
	if _, err := f.Deliver(tn, id, 1, 1); err == nil || network.IsPermanent(err) {
		t.Fatalf("attempt 1: %v, want a transient error", err)
	}
	if n := dispatched(); n != 1 {
		t.Fatalf("dispatched after the first attempt = %d, want 1", n)
	}
	f.Net.Failing.Store(false)
	if _, err := f.Deliver(tn, id, 1, 2); err != nil {
		t.Fatalf("attempt 2: %v", err)
	}
	if m := f.Get(tn, id); m.Status != messages.StatusSent {
		t.Fatalf("after the retry: %+v, want sent", m)
	}
	if n := dispatched(); n != 1 {
		t.Fatalf("dispatched after the retry = %d, want 1", n)
	}
}

// A sender suspended after acceptance: its queued messages fail undelivered.
func TestDeliverSenderSuspended(t *testing.T) {
	t.Parallel()
	f := setup(t, 100, 100)
	tn := f.Org()
	sid := f.Sender(tn, ph(1))
	f.Account(ph(2))
	id := f.MustSend(tn, sid, ph(2), "x")
	if _, err := f.DB.Pool.Exec(context.Background(), fmt.Sprintf(`UPDATE %s SET status = 'suspended'`, tn.Table("sender_numbers"))); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Deliver(tn, id, 1, 1); err != nil {
		t.Fatal(err)
	}
	m := f.Get(tn, id)
	if m.Status != messages.StatusFailed || *m.ErrorCode != messages.CodeSenderNotActive {
		t.Fatalf("%+v", m)
	}
	if f.Net.Deliveries.Load() != 0 {
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
			f := setup(t, 100, 100)
			tn := f.Org()
			sid := f.Sender(tn, ph(1))
			f.Account(ph(2))
			first, second := f.MustSend(tn, sid, ph(2), "a"), f.MustSend(tn, sid, ph(2), "b")
			if _, err := f.Deliver(tn, first, 1, 1); err != nil {
				t.Fatal(err)
			}
			if tc.change != "" {
				if _, err := f.DB.Pool.Exec(context.Background(), fmt.Sprintf(tc.change, tn.Table("sender_numbers"))); err != nil {
					t.Fatal(err)
				}
			}
			var err error
			if tc.legacy {
				_, err = f.DeliverArgs(queue.DeliverArgs{TenantRef: queue.RefOf(tn), MessageID: second}, 2, 1)
			} else {
				_, err = f.Deliver(tn, second, 2, 1)
			}
			if err != nil {
				t.Fatal(err)
			}
			m := f.Get(tn, second)
			if m.Status != tc.status || (tc.code != "" && (m.ErrorCode == nil || *m.ErrorCode != tc.code)) {
				t.Fatalf("second message %+v, want %s %s", m, tc.status, tc.code)
			}
			want := int32(1)
			if tc.status == messages.StatusSent {
				want = 2
			}
			if got := f.Net.Deliveries.Load(); got != want {
				t.Fatalf("network deliveries %d, want %d", got, want)
			}
			// Run again (a retried job): nothing changes.
			if _, err := f.Deliver(tn, second, 2, 2); err != nil {
				t.Fatal(err)
			}
			if got := f.Net.Deliveries.Load(); got != want {
				t.Fatalf("a rerun delivered again: %d", got)
			}
		})
	}
}

// A job for a message that does not exist is unusable (permanent) from
// its second attempt on; its first attempt's error is retried (on Citus
// the message may not be visible yet, docs/scaling.md).
func TestDeliverUnknownMessage(t *testing.T) {
	t.Parallel()
	f := setup(t, 100, 100)
	tn := f.Org()
	if _, err := f.Deliver(tn, 12345, 1, 1); err == nil || network.IsPermanent(err) {
		t.Fatalf("unknown message, first attempt: %v, want an error to retry", err)
	}
	if _, err := f.Deliver(tn, 12345, 1, 2); !network.IsPermanent(err) {
		t.Fatalf("unknown message, second attempt: %v", err)
	}
	if _, err := f.Svc.DeliverMessage(context.Background(), queue.DeliverArgs{TenantRef: queue.TenantRef{OrgID: tn.OrgID, Schema: "public"}, MessageID: 1},
		queue.DeliveryAttempt{Attempt: 1, MaxAttempts: 1}); !network.IsPermanent(err) {
		t.Fatalf("bad schema: %v", err)
	}
}

// Acceptance and delivery count a sender's day in rows of their own
// ('accept' and 'deliver' in daily_usage), so neither waits on the other's
// row lock, which each holds until its commit: a send goes through while a
// transaction holds the day's delivery row, and the delivery of that send
// while one holds the acceptance row.
func TestAcceptanceAndDeliveryLockApart(t *testing.T) {
	t.Parallel()
	f := setup(t, 100, 100)
	tn := f.Org()
	sid := f.Sender(tn, ph(1))
	f.Account(ph(2))
	if _, err := f.Deliver(tn, f.MustSend(tn, sid, ph(2), "first"), 1, 1); err != nil {
		t.Fatal(err)
	}
	// holding runs fn while another transaction holds the day's side row.
	holding := func(side string, fn func(ctx context.Context) error) {
		t.Helper()
		ctx := context.Background()
		tx, err := f.DB.Pool.Begin(ctx)
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
		var r sendrequest.SendRequest
		if err := json.Unmarshal(fmt.Appendf(nil, `{"sender_number_id":%d,"to_phone":%q,"type":"text","content":"second"}`, sid, ph(2)), &r); err != nil {
			return err
		}
		res, err := f.Svc.Send(ctx, tn, f.DailyLimit(tn), &r)
		id = res.MessageID
		return err
	})
	holding("accept", func(ctx context.Context) error {
		_, err := f.Svc.DeliverMessage(ctx, queue.DeliverArgs{TenantRef: queue.RefOf(tn), MessageID: id},
			queue.DeliveryAttempt{JobID: 2, Attempt: 1, MaxAttempts: 5})
		return err
	})
	if m := f.Get(tn, id); m.Status != messages.StatusSent {
		t.Fatalf("second message %+v, want sent", m)
	}
}

// missingAttempt is the attempt the batch tests run message id's job at:
// the second for the message that does not exist (999 999), whose first
// attempt is retried (TestDeliverUnknownMessage), the first for the others.
func missingAttempt(id int64) int {
	if id == 999_999 {
		return 2
	}
	return 1
}
