package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/delivery"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/messages/messagestest"
	"github.com/bizmsg/platform/platform/network"
)

// Delivery order per conversation (docs/api.md, §Delivery order).

// dispatchedAt is when message id was claimed, nil while it is not.
func (f *fixture) dispatchedAt(tn db.Tenant, id int64) *time.Time {
	f.T.Helper()
	var at *time.Time
	if err := f.DB.Pool.QueryRow(context.Background(), fmt.Sprintf(`SELECT dispatched_at FROM %s WHERE id = $1`,
		tn.Table("messages")), id).Scan(&at); err != nil {
		f.T.Fatal(err)
	}
	return at
}

// networkOrder is the ids of tn's messages on the network, in the order the
// network took them.
func (f *fixture) networkOrder(tn db.Tenant) []int64 {
	f.T.Helper()
	rows, err := f.DB.Pool.Query(context.Background(), `SELECT split_part(reference, ':', 2)::bigint
		FROM network.messages WHERE reference LIKE $1 || ':%' ORDER BY id`, tn.Schema)
	if err != nil {
		f.T.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		f.T.Fatal(err)
	}
	return ids
}

// A message waits while an earlier message of its conversation (the same
// sender number, the same recipient) is queued, wherever that one's
// delivery is: not run yet, taken by the network but not recorded (a
// worker that died in between), or between retries after a transient
// failure, and however long ago it was accepted. It waits unclaimed, with
// no throttle token, and its job ends: it goes once the earlier one is
// recorded, the earlier one's job carrying the conversation on to it. An earlier message that failed, one whose delivery has been
// failing for longer than Config.OrderWindow (10 minutes), and one of
// another conversation hold nothing back.
func TestDeliveryWaitsForEarlierMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// earlier sets the earlier message a up (sent from sender, to);
		// then b, of sender 1 to ph(10), is accepted after the fixture's
		// clock moved on by age.
		earlier func(f *fixture, tn db.Tenant, a int64)
		sender  int // 1 or 2
		to      string
		age     time.Duration
		waits   bool
	}{
		{name: "earlier queued, its job not run yet", sender: 1, to: ph(10), waits: true},
		{name: "earlier taken by the network, not recorded", sender: 1, to: ph(10), waits: true,
			earlier: func(f *fixture, tn db.Tenant, a int64) {
				if _, err := f.Net.Network.Deliver(context.Background(), network.Message{Reference: messages.Reference(tn, a),
					FromPhone: ph(1), ToPhone: ph(10), Media: network.Media{Type: messages.TypeText, Content: "a"}}); err != nil {
					f.T.Fatal(err)
				}
			}},
		{name: "earlier between retries", sender: 1, to: ph(10), waits: true,
			earlier: func(f *fixture, tn db.Tenant, a int64) {
				f.Net.Failing.Store(true)
				defer f.Net.Failing.Store(false)
				if _, err := f.Deliver(tn, a, 1, 1); !network.IsTransient(err) {
					f.T.Fatalf("earlier message's first attempt: %v, want a transient failure", err)
				}
				if f.dispatchedAt(tn, a) == nil {
					f.T.Fatal("the earlier message was not claimed before its network failure")
				}
			}},
		{name: "earlier accepted long ago, waiting", sender: 1, to: ph(10), age: time.Hour, waits: true},
		{name: "earlier failing just inside the window", sender: 1, to: ph(10), age: 10*time.Minute - time.Second, waits: true,
			earlier: failingEarlier},
		{name: "earlier failed", sender: 1, to: ph(10),
			earlier: func(f *fixture, tn db.Tenant, a int64) {
				f.Net.Failing.Store(true)
				defer f.Net.Failing.Store(false)
				if _, err := f.Deliver(tn, a, 1, 5); !network.IsTransient(err) {
					f.T.Fatalf("earlier message's last attempt: %v", err)
				}
				if m := f.Get(tn, a); m.Status != messages.StatusFailed {
					f.T.Fatalf("earlier message %s, want failed", m.Status)
				}
			}},
		{name: "earlier failing past the window", sender: 1, to: ph(10), age: 10*time.Minute + time.Second,
			earlier: failingEarlier},
		{name: "earlier to another recipient", sender: 1, to: ph(11)},
		{name: "earlier from another sender", sender: 2, to: ph(10)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, 1000, 1000)
			tn := f.Org()
			sids := map[int]int64{1: f.Sender(tn, ph(1)), 2: f.Sender(tn, ph(2))}
			f.Account(ph(10))
			f.Account(ph(11))
			a := f.MustSend(tn, sids[tc.sender], tc.to, "a")
			if tc.earlier != nil {
				tc.earlier(f, tn, a)
			}
			f.Clock.Advance(tc.age)
			b := f.MustSend(tn, sids[1], ph(10), "b")

			d, err := f.Deliver(tn, b, 2, 1)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.waits {
				if d != 0 || f.Get(tn, b).Status != messages.StatusSent {
					t.Fatalf("b: snooze %s, %s; want sent at once", d, f.Get(tn, b).Status)
				}
				return
			}
			if d != 0 {
				t.Fatalf("b: snooze %s, want its job ended (the earlier one's job carries b)", d)
			}
			if m := f.Get(tn, b); m.Status != messages.StatusQueued || f.dispatchedAt(tn, b) != nil {
				t.Fatalf("b after its wait: %s, dispatched %v; want queued and unclaimed", m.Status, f.dispatchedAt(tn, b))
			}
			if got := f.networkOrder(tn); slices.Contains(got, b) {
				t.Fatalf("b reached the network before a: %v", got)
			}
			// The earlier one is recorded (its job runs again), and its job
			// carries the conversation on: b goes in the same run.
			f.Svc.SetMaxInlineWait(time.Minute)
			if d, err := f.Deliver(tn, a, 1, 2); d != 0 || err != nil {
				t.Fatalf("a's job: %s, %v", d, err)
			}
			if m := f.Get(tn, b); m.Status != messages.StatusSent {
				t.Fatalf("b after a's job: %s, want sent by it", m.Status)
			}
			if d, err := f.Deliver(tn, b, 2, 1); d != 0 || err != nil {
				t.Fatalf("b's own job once b is sent: %s, %v", d, err)
			}
			if got := f.networkOrder(tn); !slices.Equal(got, []int64{a, b}) {
				t.Fatalf("network order %v, want [%d %d]", got, a, b)
			}
		})
	}
}

// failingEarlier fails the earlier message a's first delivery attempt
// transiently: it stays queued, failing since the fixture's clock's now.
func failingEarlier(f *fixture, tn db.Tenant, a int64) {
	f.Net.Failing.Store(true)
	defer f.Net.Failing.Store(false)
	if _, err := f.Deliver(tn, a, 1, 1); !network.IsTransient(err) {
		f.T.Fatalf("earlier message's first attempt: %v, want a transient failure", err)
	}
}

// Within one delivery batch only the first queued message of a conversation
// is claimed and delivered, whatever the order of the jobs; the later ones
// wait, unclaimed (the first one's job carries the conversation on). Other
// conversations share the batch's network call. A transient failure and a
// refusal of the first leave the later ones waiting alike.
func TestDeliverBatchOrdersConversation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fault error // of the conversation's first message
		first string
	}{
		{name: "first delivered", first: "sent"},
		{name: "first fails transiently", fault: errors.New("network: timeout"), first: "queued"},
		{name: "first refused", fault: &network.PermanentError{Code: network.CodeReceivingDisabled, Message: "no"}, first: "failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, 1000, 1000)
			tn := f.Org()
			s1, s2 := f.Sender(tn, ph(1)), f.Sender(tn, ph(2))
			f.Account(ph(10))
			f.Account(ph(11))
			conv := []int64{f.MustSend(tn, s1, ph(10), "a"), f.MustSend(tn, s1, ph(10), "b"), f.MustSend(tn, s1, ph(10), "c")}
			other1, other2 := f.MustSend(tn, s1, ph(11), "d"), f.MustSend(tn, s2, ph(10), "e")
			if tc.fault != nil {
				f.Net.Faults.Store(messages.Reference(tn, conv[0]), tc.fault)
			}
			// The jobs in another order than the messages'.
			ids := []int64{conv[2], other1, conv[0], other2, conv[1]}
			errs, err := f.Svc.DeliverTogether(context.Background(), tn, ids, 1)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{tc.first, "queued", "queued"}
			for i, id := range conv {
				if got := f.Get(tn, id).Status; got != want[i] {
					t.Errorf("message %d of the conversation: %s, want %s", i, got, want[i])
				}
			}
			for _, id := range conv[1:] {
				if f.dispatchedAt(tn, id) != nil {
					t.Errorf("message %d claimed while an earlier one was queued", id)
				}
			}
			for _, id := range []int64{other1, other2} {
				if got := f.Get(tn, id).Status; got != messages.StatusSent {
					t.Errorf("message %d of another conversation: %s, want sent", id, got)
				}
			}
			for i, id := range ids {
				if slices.Contains(conv[1:], id) && !delivery.IsOrderWait(errs[i]) {
					t.Errorf("message %d: outcome %v, want a wait for order", id, errs[i])
				}
			}
			var onNetwork []int64
			for _, id := range f.networkOrder(tn) {
				if slices.Contains(conv, id) {
					onNetwork = append(onNetwork, id)
				}
			}
			wantNet := conv[:1] // the first only; none when it failed or was refused
			if tc.fault != nil {
				wantNet = nil
			}
			if !slices.Equal(onNetwork, wantNet) {
				t.Errorf("the conversation's messages on the network: %v, want %v", onNetwork, wantNet)
			}
		})
	}
}

// A message that waits for an earlier one takes no throttle token: the
// earlier one, the head of the conversation, gets the sender's next token
// even when the later message's job ran first. Then the head's job hands the
// conversation on to a job of the next message (its run may not wait in the
// fixture), which waits for its own token, reserved under the message's
// ticket.
func TestWaitingDeliveryTakesNoToken(t *testing.T) {
	t.Parallel()
	f := setup(t, 1, 1) // one token a second
	tn := f.Org()
	sid := f.Sender(tn, ph(1))
	f.Account(ph(10))
	a, b := f.MustSend(tn, sid, ph(10), "a"), f.MustSend(tn, sid, ph(10), "b")
	if d, err := f.Deliver(tn, b, 2, 1); d != 0 || err != nil || f.Get(tn, b).Status != messages.StatusQueued {
		t.Fatalf("b: %s %v %s, want its job ended, b left queued for a's job", d, err, f.Get(tn, b).Status)
	}
	if d, err := f.Deliver(tn, a, 1, 1); d != 0 || err != nil {
		t.Fatalf("a: %s %v, want delivered on the bucket's one token", d, err)
	}
	if n := f.deliveryJobs(tn, b); n != 2 {
		t.Fatalf("b has %d delivery jobs, want 2: its own and the one a's job handed it to", n)
	}
	if d, err := f.Deliver(tn, b, 3, 1); d != time.Second || err != nil {
		t.Fatalf("b's new job: %s %v, want a snooze of 1s for its token", d, err)
	}
	f.Wall.Advance(time.Second)
	if d, err := f.Deliver(tn, b, 3, 1); d != 0 || err != nil {
		t.Fatalf("b on its reserved token: %s %v", d, err)
	}
	if got := f.networkOrder(tn); !slices.Equal(got, []int64{a, b}) {
		t.Fatalf("network order %v, want [%d %d]", got, a, b)
	}
}

// newConversation is a fixture whose delivery runs may wait a minute, with
// a tenant, its sender sid and three messages a, b and c of one
// conversation (sid to ph(10)).
func newConversation(t *testing.T) (f *fixture, tn db.Tenant, sid, a, b, c int64) {
	t.Helper()
	f = setupWith(t, 1000, 1000, func(c *messagestest.Config) { c.Delivery.MaxInlineWait = time.Minute })
	tn = f.Org()
	sid = f.Sender(tn, ph(1))
	f.Account(ph(10))
	a, b, c = f.MustSend(tn, sid, ph(10), "a"), f.MustSend(tn, sid, ph(10), "b"), f.MustSend(tn, sid, ph(10), "c")
	return f, tn, sid, a, b, c
}

// deliveryJobs counts message id's delivery jobs.
func (f *fixture) deliveryJobs(tn db.Tenant, id int64) int {
	f.T.Helper()
	var n int
	if err := f.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM river.river_job
		WHERE kind = 'message_delivery' AND args->>'schema' = $1 AND (args->>'message_id')::bigint = $2`,
		tn.Schema, id).Scan(&n); err != nil {
		f.T.Fatal(err)
	}
	return n
}

// The job of a conversation's first message delivers the messages behind it
// in its run, one network call each, in order; a job whose message another
// job's claim holds waits (snoozes for Config.ClaimLease, when the claim
// would have lapsed) and does not reach the network; a claim lapses after Config.ClaimLease, and the claiming
// job's own next run (a rescue) takes it back at once.
func TestJobCarriesConversationOn(t *testing.T) {
	t.Parallel()
	f, tn, sid, a, b, c := newConversation(t)

	// a's job is in its network call, holding a: another job of a waits.
	hold := make(chan struct{})
	f.Net.Hold.Store(&hold)
	done := make(chan error, 1)
	go func() {
		_, err := f.Deliver(tn, a, 1, 1)
		done <- err
	}()
	messagestest.WaitFor(t, func() bool { return f.Net.Batches.Load() == 1 })
	if d, err := f.Deliver(tn, a, 9, 1); d != 10*time.Second || err != nil {
		t.Fatalf("another job of a while a's job holds it: %s %v, want a snooze of Config.ClaimLease", d, err)
	}
	close(hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{a, b, c} {
		if m := f.Get(tn, id); m.Status != messages.StatusSent {
			t.Fatalf("message %d after a's job: %s, want sent by it", id, m.Status)
		}
	}
	if n := f.Net.Batches.Load(); n != 3 {
		t.Errorf("%d network calls, want 3 (one each)", n)
	}
	if got := f.networkOrder(tn); !slices.Equal(got, []int64{a, b, c}) {
		t.Fatalf("network order %v, want [%d %d %d]", got, a, b, c)
	}

	// A claim of a job that died: others wait until it lapses; its own job
	// takes it back at once.
	// claim stamps message id claimed by job age ago.
	claim := func(id, job int64, age time.Duration) {
		if _, err := f.DB.Pool.Exec(context.Background(), fmt.Sprintf(`UPDATE %s
			SET claimed_by = $2, claimed_at = statement_timestamp() - make_interval(secs => $3) WHERE id = $1`,
			tn.Table("messages")), id, job, age.Seconds()); err != nil {
			t.Fatal(err)
		}
	}
	d := f.MustSend(tn, sid, ph(10), "d")
	claim(d, 7, time.Second)
	if got, err := f.Deliver(tn, d, 8, 1); got != 10*time.Second || err != nil {
		t.Fatalf("d held by job 7: %s %v, want a snooze of Config.ClaimLease", got, err)
	}
	if got, err := f.Deliver(tn, d, 7, 2); got != 0 || err != nil || f.Get(tn, d).Status != messages.StatusSent {
		t.Fatalf("job 7's own next run: %s %v %s, want d sent", got, err, f.Get(tn, d).Status)
	}
	e := f.MustSend(tn, sid, ph(10), "e")
	claim(e, 7, 11*time.Second)
	if got, err := f.Deliver(tn, e, 8, 1); got != 0 || err != nil || f.Get(tn, e).Status != messages.StatusSent {
		t.Fatalf("e after job 7's claim lapsed: %s %v %s, want sent", got, err, f.Get(tn, e).Status)
	}
}

// A message a job carried its conversation on to that fails transiently is
// handed back to a job of its own, its claim released, so that its retries
// (attempts and backoff) are its own: the carrying job ends done, and the
// message stays queued, failing, ahead of the rest of its conversation.
func TestCarriedMessageFailureGoesToItsOwnJob(t *testing.T) {
	t.Parallel()
	f, tn, _, a, b, c := newConversation(t)
	f.Net.Faults.Store(messages.Reference(tn, b), errors.New("network: timeout"))
	if d, err := f.Deliver(tn, a, 1, 1); d != 0 || err != nil {
		t.Fatalf("a's job: %s %v, want done", d, err)
	}
	var claimedBy *int64
	var failing *time.Time
	if err := f.DB.Pool.QueryRow(context.Background(), fmt.Sprintf(`SELECT claimed_by, failing_since FROM %s WHERE id = $1`,
		tn.Table("messages")), b).Scan(&claimedBy, &failing); err != nil {
		t.Fatal(err)
	}
	if claimedBy != nil || failing == nil || f.Get(tn, b).Status != messages.StatusQueued || f.Get(tn, c).Status != messages.StatusQueued {
		t.Fatalf("b: claimed by %v, failing since %v, %s; c %s: want b queued, unclaimed and failing, c waiting",
			claimedBy, failing, f.Get(tn, b).Status, f.Get(tn, c).Status)
	}
	if n := f.deliveryJobs(tn, b); n != 2 {
		t.Fatalf("b has %d delivery jobs, want 2: its own and the one it was handed back to", n)
	}
	f.Net.Faults.Delete(messages.Reference(tn, b))
	if d, err := f.Deliver(tn, b, 5, 1); d != 0 || err != nil {
		t.Fatalf("b's new job: %s %v", d, err)
	}
	if got := f.networkOrder(tn); !slices.Equal(got, []int64{a, b, c}) {
		t.Fatalf("network order %v, want [%d %d %d]", got, a, b, c)
	}
}

// A message whose delivery keeps failing holds its conversation back for
// the order window at most, and a message failed for good not at all: its
// job's attempt after the window, or its last attempt, hands the
// conversation's next message to a job of its own (the next message's own
// job ended when it found the failing one ahead of it), which delivers it.
// An attempt inside the window hands nothing over.
func TestStuckMessageHandsConversationOver(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		advance time.Duration
		attempt int
		failed  bool
	}{
		{name: "retry after the window", advance: 10*time.Minute + time.Second, attempt: 2},
		{name: "last attempt", attempt: 5, failed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, 1000, 1000)
			tn := f.Org()
			sid := f.Sender(tn, ph(1))
			f.Account(ph(10))
			a, b := f.MustSend(tn, sid, ph(10), "a"), f.MustSend(tn, sid, ph(10), "b")
			f.Net.Faults.Store(messages.Reference(tn, a), errors.New("network: timeout"))
			if _, err := f.Deliver(tn, a, 1, 1); !network.IsTransient(err) {
				t.Fatalf("a's first attempt: %v, want a transient failure", err)
			}
			if d, err := f.Deliver(tn, b, 2, 1); d != 0 || err != nil || f.Get(tn, b).Status != messages.StatusQueued {
				t.Fatalf("b behind failing a: %s %v %s, want its job ended and b queued", d, err, f.Get(tn, b).Status)
			}
			if _, err := f.Deliver(tn, a, 1, 2); !network.IsTransient(err) || f.deliveryJobs(tn, b) != 1 {
				t.Fatalf("a's retry inside the window: %v, b has %d jobs; want a transient failure and no hand-over", err, f.deliveryJobs(tn, b))
			}
			f.Clock.Advance(tc.advance)
			if _, err := f.Deliver(tn, a, 1, tc.attempt); !network.IsTransient(err) {
				t.Fatalf("a's attempt %d: %v, want a transient failure", tc.attempt, err)
			}
			if n := f.deliveryJobs(tn, b); n != 2 {
				t.Fatalf("b has %d delivery jobs, want 2: its own and the one a's job handed it to", n)
			}
			f.RunHandedOver(tn)
			if m := f.Get(tn, b); m.Status != messages.StatusSent {
				t.Fatalf("b after the hand-over: %s, want sent", m.Status)
			}
			if want := map[bool]string{false: messages.StatusQueued, true: messages.StatusFailed}[tc.failed]; f.Get(tn, a).Status != want {
				t.Fatalf("a: %s, want %s", f.Get(tn, a).Status, want)
			}
		})
	}
}
