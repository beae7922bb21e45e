package messages_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/network"
)

// Delivery order per conversation (docs/api.md, §Delivery order).

// dispatchedAt is when message id was claimed, nil while it is not.
func (f *fixture) dispatchedAt(tn db.Tenant, id int64) *time.Time {
	f.t.Helper()
	var at *time.Time
	if err := f.db.Pool.QueryRow(context.Background(), fmt.Sprintf(`SELECT dispatched_at FROM %s WHERE id = $1`,
		tn.Table("messages")), id).Scan(&at); err != nil {
		f.t.Fatal(err)
	}
	return at
}

// networkOrder is the ids of tn's messages on the network, in the order the
// network took them.
func (f *fixture) networkOrder(tn db.Tenant) []int64 {
	f.t.Helper()
	rows, err := f.db.Pool.Query(context.Background(), `SELECT split_part(reference, ':', 2)::bigint
		FROM network.messages WHERE reference LIKE $1 || ':%' ORDER BY id`, tn.Schema)
	if err != nil {
		f.t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		f.t.Fatal(err)
	}
	return ids
}

// A message waits while an earlier message of its conversation (the same
// sender number, the same recipient) is queued, wherever that one's
// delivery is: not run yet, taken by the network but not recorded (a
// worker that died in between), or between retries after a transient
// failure. It waits unclaimed, snoozing for Config.OrderWait, and goes once
// the earlier one is recorded. An earlier message that failed, one accepted
// more than Config.OrderWindow (10 minutes) before the claim, and one of
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
				if _, err := f.net.Network.Deliver(context.Background(), network.Message{Reference: messages.Reference(tn, a),
					FromPhone: ph(1), ToPhone: ph(10), Type: messages.TypeText, Content: "a"}); err != nil {
					f.t.Fatal(err)
				}
			}},
		{name: "earlier between retries", sender: 1, to: ph(10), waits: true,
			earlier: func(f *fixture, tn db.Tenant, a int64) {
				f.net.failing.Store(true)
				defer f.net.failing.Store(false)
				if _, err := f.deliver(tn, a, 1, 1); !network.IsTransient(err) {
					f.t.Fatalf("earlier message's first attempt: %v, want a transient failure", err)
				}
				if f.dispatchedAt(tn, a) == nil {
					f.t.Fatal("the earlier message was not claimed before its network failure")
				}
			}},
		{name: "earlier accepted just inside the window", sender: 1, to: ph(10), age: 10*time.Minute - time.Second, waits: true},
		{name: "earlier failed", sender: 1, to: ph(10),
			earlier: func(f *fixture, tn db.Tenant, a int64) {
				f.net.failing.Store(true)
				defer f.net.failing.Store(false)
				if _, err := f.deliver(tn, a, 1, 5); !network.IsTransient(err) {
					f.t.Fatalf("earlier message's last attempt: %v", err)
				}
				if m := f.get(tn, a); m.Status != messages.StatusFailed {
					f.t.Fatalf("earlier message %s, want failed", m.Status)
				}
			}},
		{name: "earlier accepted past the window", sender: 1, to: ph(10), age: 10*time.Minute + time.Second},
		{name: "earlier to another recipient", sender: 1, to: ph(11)},
		{name: "earlier from another sender", sender: 2, to: ph(10)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 1000, 1000)
			tn := f.org()
			sids := map[int]int64{1: f.sender(tn, ph(1)), 2: f.sender(tn, ph(2))}
			f.account(ph(10))
			f.account(ph(11))
			a := f.mustSend(tn, sids[tc.sender], tc.to, "a")
			if tc.earlier != nil {
				tc.earlier(f, tn, a)
			}
			f.clock.Advance(tc.age)
			b := f.mustSend(tn, sids[1], ph(10), "b")

			d, err := f.deliver(tn, b, 2, 1)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.waits {
				if d != 0 || f.get(tn, b).Status != messages.StatusSent {
					t.Fatalf("b: snooze %s, %s; want sent at once", d, f.get(tn, b).Status)
				}
				return
			}
			if d != time.Millisecond {
				t.Fatalf("b: snooze %s, want Config.OrderWait (1ms in the fixture)", d)
			}
			if m := f.get(tn, b); m.Status != messages.StatusQueued || f.dispatchedAt(tn, b) != nil {
				t.Fatalf("b after its wait: %s, dispatched %v; want queued and unclaimed", m.Status, f.dispatchedAt(tn, b))
			}
			if got := f.networkOrder(tn); slices.Contains(got, b) {
				t.Fatalf("b reached the network before a: %v", got)
			}
			// The earlier one is recorded (its job runs again): b goes.
			if err := f.deliverDone(tn, a, 1, 2); err != nil {
				t.Fatal(err)
			}
			if d, err := f.deliver(tn, b, 2, 1); d != 0 || err != nil {
				t.Fatalf("b once a is recorded: %s, %v", d, err)
			}
			if got := f.networkOrder(tn); !slices.Equal(got, []int64{a, b}) {
				t.Fatalf("network order %v, want [%d %d]", got, a, b)
			}
		})
	}
}

// Within one delivery batch the messages of a conversation are delivered
// one after the other, each in its own network call after the earlier one
// was taken, in id order whatever the order of the jobs; other
// conversations share those calls. A transient failure holds the rest of
// its conversation back (they wait), a refusal does not.
func TestDeliverBatchOrdersConversation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fault error // of the conversation's first message, in its first call
		// want is the status of the conversation's three messages.
		want []string
	}{
		{name: "all delivered", want: []string{"sent", "sent", "sent"}},
		{name: "first fails transiently", fault: errors.New("network: timeout"),
			want: []string{"queued", "queued", "queued"}},
		{name: "first refused", fault: &network.PermanentError{Code: network.CodeReceivingDisabled, Message: "no"},
			want: []string{"failed", "sent", "sent"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 1000, 1000)
			tn := f.org()
			s1, s2 := f.sender(tn, ph(1)), f.sender(tn, ph(2))
			f.account(ph(10))
			f.account(ph(11))
			conv := []int64{f.mustSend(tn, s1, ph(10), "a"), f.mustSend(tn, s1, ph(10), "b"), f.mustSend(tn, s1, ph(10), "c")}
			other1, other2 := f.mustSend(tn, s1, ph(11), "d"), f.mustSend(tn, s2, ph(10), "e")
			if tc.fault != nil {
				f.net.faults.Store(messages.Reference(tn, conv[0]), tc.fault)
			}
			// The jobs in another order than the messages'.
			ids := []int64{conv[2], other1, conv[0], other2, conv[1]}
			errs, err := f.svc.DeliverTogether(context.Background(), tn, ids, 1)
			if err != nil {
				t.Fatal(err)
			}
			for i, id := range conv {
				if got := f.get(tn, id).Status; got != tc.want[i] {
					t.Errorf("message %d of the conversation: %s, want %s", i, got, tc.want[i])
				}
			}
			for _, id := range []int64{other1, other2} {
				if got := f.get(tn, id).Status; got != messages.StatusSent {
					t.Errorf("message %d of another conversation: %s, want sent", id, got)
				}
			}
			outcome := map[int64]error{}
			for i, id := range ids {
				outcome[id] = errs[i]
			}
			if tc.fault != nil && !network.IsPermanent(tc.fault) {
				if !network.IsTransient(outcome[conv[0]]) || !messages.IsOrderWait(outcome[conv[1]]) || !messages.IsOrderWait(outcome[conv[2]]) {
					t.Errorf("outcomes %v, %v, %v: want a transient failure, then two waits",
						outcome[conv[0]], outcome[conv[1]], outcome[conv[2]])
				}
			}
			// One message of the conversation per network call, in order.
			var seen []string
			f.net.callsMu.Lock()
			for _, call := range f.net.calls {
				n := 0
				for _, ref := range call {
					if slices.Contains(conv, refID(t, ref)) {
						n++
						seen = append(seen, ref)
					}
				}
				if n > 1 {
					t.Errorf("a network call with %d messages of one conversation: %v", n, call)
				}
			}
			f.net.callsMu.Unlock()
			var want []string
			for i, id := range conv {
				if tc.want[i] != "queued" || i == 0 {
					want = append(want, messages.Reference(tn, id))
				}
			}
			if !slices.Equal(seen, want) {
				t.Errorf("the conversation's messages went to the network as %v, want %v", seen, want)
			}
			var onNetwork []int64
			for _, id := range f.networkOrder(tn) {
				if slices.Contains(conv, id) {
					onNetwork = append(onNetwork, id)
				}
			}
			if !slices.IsSorted(onNetwork) {
				t.Errorf("network order %v: not the acceptance order", onNetwork)
			}
		})
	}
}

// refID is the message id of a delivery reference "<schema>:<id>".
func refID(t *testing.T, ref string) int64 {
	t.Helper()
	id, err := strconv.ParseInt(ref[strings.LastIndexByte(ref, ':')+1:], 10, 64)
	if err != nil {
		t.Fatalf("reference %q: %v", ref, err)
	}
	return id
}

// A job that waited for order after taking its throttle token keeps the
// token for its next run: waiting costs the sender no token.
func TestDeliveryWaitKeepsItsToken(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, 1) // one token a second
	tn := f.org()
	sid := f.sender(tn, ph(1))
	f.account(ph(10))
	a, b := f.mustSend(tn, sid, ph(10), "a"), f.mustSend(tn, sid, ph(10), "b")
	// b's job runs first and takes the only token, then waits for a.
	if d, err := f.deliver(tn, b, 2, 1); d != time.Millisecond || err != nil {
		t.Fatalf("b: %s %v, want a wait for a", d, err)
	}
	if d, err := f.deliver(tn, a, 1, 1); d != time.Second || err != nil {
		t.Fatalf("a: %s %v, want a snooze of 1s for its token", d, err)
	}
	f.wall.Advance(time.Second)
	if d, err := f.deliver(tn, a, 1, 1); d != 0 || err != nil {
		t.Fatalf("a on its token: %s %v", d, err)
	}
	// The bucket is empty, but b holds the token it took.
	if d, err := f.deliver(tn, b, 2, 1); d != 0 || err != nil {
		t.Fatalf("b on the token it kept: %s %v, want delivered at once", d, err)
	}
	if got := f.networkOrder(tn); !slices.Equal(got, []int64{a, b}) {
		t.Fatalf("network order %v, want [%d %d]", got, a, b)
	}
}

// A delivery that must wait for an earlier message of its conversation
// whose job runs in the same process waits in its run for that run to end,
// and goes then without a snooze; behind that message's own wait, too (c
// waits for b, which waits for a). It snoozes as before when that run ends
// with the earlier message still queued (a transient failure), when no job
// of the earlier message runs in the process, and when its inline wait
// (Config.MaxInlineWait) runs out first.
func TestDeliveryWaitsInItsRunForEarlierRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// inline is Config.MaxInlineWait.
		inline time.Duration
		// earlierRuns: a's job is in the network call, held, when the jobs
		// of b and c run; earlierFails: that call fails transiently.
		earlierRuns, earlierFails bool
		// snooze: b's and c's runs end in a snooze; else they deliver.
		snooze bool
	}{
		{name: "earlier delivered in this process", inline: time.Minute, earlierRuns: true},
		{name: "earlier fails in this process", inline: time.Minute, earlierRuns: true, earlierFails: true, snooze: true},
		{name: "earlier not running in this process", inline: time.Minute, snooze: true},
		{name: "inline wait runs out", inline: 50 * time.Millisecond, earlierRuns: true, snooze: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixtureWith(t, 1000, 1000, func(c *messages.Config) { c.MaxInlineWait = tc.inline })
			tn := f.org()
			sid := f.sender(tn, ph(1))
			f.account(ph(10))
			a, b, c := f.mustSend(tn, sid, ph(10), "a"), f.mustSend(tn, sid, ph(10), "b"), f.mustSend(tn, sid, ph(10), "c")

			type outcome struct {
				snooze time.Duration
				err    error
			}
			run := func(id, job int64) <-chan outcome {
				out := make(chan outcome, 1)
				go func() {
					d, err := f.deliver(tn, id, job, 1)
					out <- outcome{d, err}
				}()
				return out
			}
			hold := make(chan struct{})
			var aDone <-chan outcome
			if tc.earlierRuns {
				f.net.hold.Store(&hold)
				f.net.failing.Store(tc.earlierFails)
				aDone = run(a, 1)
				waitFor(t, func() bool { return f.net.batches.Load() == 1 })
			}
			var bDone, cDone <-chan outcome
			if tc.earlierRuns && tc.inline == time.Minute {
				// b waits for a's run, then c for b's. c starts only once
				// b waits: a c that ran first would find b queued and not
				// running here, and snooze.
				bDone = run(b, 2)
				waitFor(t, func() bool { return f.svc.Parked() == 1 })
				cDone = run(c, 3)
				waitFor(t, func() bool { return f.svc.Parked() == 2 })
				close(hold)
			} else {
				bDone, cDone = run(b, 2), run(c, 3)
			}
			for name, done := range map[string]<-chan outcome{"b": bDone, "c": cDone} {
				got := <-done
				switch {
				case got.err != nil:
					t.Errorf("%s: %v", name, got.err)
				case tc.snooze && got.snooze != time.Millisecond:
					t.Errorf("%s: snooze %s, want Config.OrderWait (1ms in the fixture)", name, got.snooze)
				case !tc.snooze && got.snooze != 0:
					t.Errorf("%s: snooze %s, want delivered in its run", name, got.snooze)
				}
			}
			if tc.snooze {
				for _, id := range []int64{b, c} {
					if m := f.get(tn, id); m.Status != messages.StatusQueued || f.dispatchedAt(tn, id) != nil {
						t.Errorf("message %d after its snooze: %s, dispatched %v; want queued and unclaimed", id, m.Status, f.dispatchedAt(tn, id))
					}
				}
			}
			if tc.earlierRuns {
				if tc.inline != time.Minute {
					close(hold)
				}
				got := <-aDone
				if tc.earlierFails != network.IsTransient(got.err) || got.snooze != 0 {
					t.Errorf("a: %s, %v", got.snooze, got.err)
				}
				f.net.failing.Store(false)
			}
			for i, id := range []int64{a, b, c} {
				if err := f.deliverDone(tn, id, int64(i+1), 2); err != nil {
					t.Fatal(err)
				}
			}
			if got := f.networkOrder(tn); !slices.Equal(got, []int64{a, b, c}) {
				t.Fatalf("network order %v, want [%d %d %d]", got, a, b, c)
			}
			if tc.earlierRuns && !tc.earlierFails && tc.inline == time.Minute {
				if n := f.net.batches.Load(); n != 3 {
					t.Errorf("%d network calls, want 3 (one each)", n)
				}
			}
		})
	}
}
