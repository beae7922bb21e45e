package delivery_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/batch"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/messages/messagestest"
	"github.com/bizmsg/platform/platform/network"
)

// dispatched is the sender's dispatched counter of the fixture's day.
func (f *fixture) dispatched(tn db.Tenant, sid int64) int {
	f.T.Helper()
	var n int
	if err := f.DB.Pool.QueryRow(context.Background(), fmt.Sprintf(`SELECT dispatched FROM %s
		WHERE sender_number_id = $1 AND day = $2::date AND side = 'deliver'`, tn.Table("daily_usage")),
		sid, start.Format(time.DateOnly)).Scan(&n); err != nil {
		f.T.Fatal(err)
	}
	return n
}

// Deliveries that run at the same time are claimed, delivered and recorded
// as one batch, with every message's outcome its own: within one batch a
// lowered daily limit lets exactly its remaining places through, a
// suspended sender's messages fail, a network refusal fails only its
// message, an unknown message is its job's permanent error, and two jobs of
// one message deliver it once. Counters and the network agree, and running
// every job again changes nothing. (A job whose message waits for an
// earlier one of its conversation, in a batch that formed without it, runs
// again after its snooze, as River would.)
func TestDeliverBatchOutcomes(t *testing.T) {
	t.Parallel()
	f := setupWith(t, 1000, 1000, func(c *messagestest.Config) {
		c.Delivery.Batch = batch.Config{MaxInFlight: 1}
	})
	tn := f.Org()
	capped, suspended, open := f.Sender(tn, ph(1)), f.Sender(tn, ph(2)), f.Sender(tn, ph(3))
	f.Account(ph(10))
	f.Account(ph(11))
	var ids []int64
	send := func(sid int64, to string, n int) []int64 {
		var out []int64
		for i := range n {
			out = append(out, f.MustSend(tn, sid, to, fmt.Sprintf("m%d", i)))
		}
		ids = append(ids, out...)
		return out
	}
	cappedIDs := send(capped, ph(10), 8)
	suspendedIDs := send(suspended, ph(10), 3)
	openIDs := send(open, ph(10), 10)
	blockedID := send(open, ph(11), 1)[0]

	ctx := context.Background()
	f.Exec(
		fmt.Sprintf(`UPDATE %s SET daily_limit_override = 5 WHERE id = %d`, tn.Table("sender_numbers"), capped),
		fmt.Sprintf(`UPDATE %s SET status = 'suspended' WHERE id = %d`, tn.Table("sender_numbers"), suspended),
	)
	if err := f.Net.Block(ctx, ph(11), ph(3)); err != nil {
		t.Fatal(err)
	}

	// The first job's batch is held in the network while every other job
	// (and a second job of one message, and a job of a message that does
	// not exist) queues behind it.
	hold := make(chan struct{})
	f.Net.Hold.Store(&hold)
	errs := make([]error, len(ids)+2)
	var wg sync.WaitGroup
	run := func(i int, id int64) {
		defer wg.Done()
		errs[i] = f.DeliverDone(tn, id, int64(1000+i), missingAttempt(id))
	}
	wg.Add(1)
	go run(0, ids[0])
	messagestest.WaitFor(t, func() bool { return f.Net.Batches.Load() == 1 })
	others := append(append([]int64(nil), ids[1:]...), openIDs[0], 999_999)
	for i, id := range others {
		wg.Add(1)
		go run(i+1, id)
	}
	// Every other job waits for the held batch's run to end.
	messagestest.WaitFor(t, func() bool { return f.DeliveriesQueued.Load() == int32(len(others)) })
	close(hold)
	wg.Wait()
	f.FinishHandedOver(tn)

	for i, err := range errs[:len(errs)-1] {
		if err != nil {
			t.Errorf("job %d: %v", i, err)
		}
	}
	if err := errs[len(errs)-1]; !network.IsPermanent(err) {
		t.Errorf("job of a missing message: %v, want a permanent error", err)
	}
	if f.Net.Multi.Load() == 0 {
		t.Fatalf("%d network batches, none of more than one message: nothing was batched", f.Net.Batches.Load())
	}

	status := func(ids []int64) map[string]int {
		out := map[string]int{}
		for _, id := range ids {
			m := f.Get(tn, id)
			k := m.Status
			if m.ErrorCode != nil {
				k += " " + *m.ErrorCode
			}
			out[k]++
		}
		return out
	}
	check := func() {
		t.Helper()
		for _, tc := range []struct {
			name string
			ids  []int64
			want map[string]int
		}{
			{"capped sender", cappedIDs, map[string]int{"sent": 5, "failed daily_limit_exceeded": 3}},
			{"suspended sender", suspendedIDs, map[string]int{"failed sender_not_active": 3}},
			{"open sender", openIDs, map[string]int{"sent": 10}},
			{"blocked recipient", []int64{blockedID}, map[string]int{"failed blocked_sender": 1}},
		} {
			if got := status(tc.ids); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			}
		}
		for _, tc := range []struct {
			sid        int64
			dispatched int
			usage      messagestest.Usage
		}{
			{capped, 5, messagestest.Usage{Used: 8, Sent: 5, Failed: 3}},
			{suspended, 0, messagestest.Usage{Used: 3, Failed: 3}},
			{open, 11, messagestest.Usage{Used: 11, Sent: 10, Failed: 1}},
		} {
			if got := f.Usage(tn, tc.sid); got != tc.usage {
				t.Errorf("sender %d usage %+v, want %+v", tc.sid, got, tc.usage)
			}
			if got := f.dispatched(tn, tc.sid); got != tc.dispatched {
				t.Errorf("sender %d dispatched %d, want %d", tc.sid, got, tc.dispatched)
			}
		}
		if n := f.NetworkCount(); n != 15 {
			t.Errorf("the network holds %d messages, want 15", n)
		}
	}
	check()

	// Every job again, as River would after a crash: nothing changes.
	before := f.Net.Deliveries.Load()
	for i, id := range ids {
		wg.Add(1)
		go run(i, id)
	}
	wg.Wait()
	f.FinishHandedOver(tn)
	for i, err := range errs[:len(ids)] {
		if err != nil {
			t.Errorf("rerun of job %d: %v", i, err)
		}
	}
	if got := f.Net.Deliveries.Load(); got != before {
		t.Errorf("the rerun asked the network for %d deliveries", got-before)
	}
	check()
}

// Many deliveries of several senders in concurrent batches (up to four at
// once per tenant, across two tenants) all reach sent exactly once, with
// counters that agree: the batches' locks never deadlock (a deadlock would
// be a job's error). Each sender writes to one recipient, so a job often
// waits for an earlier message of its conversation and runs again.
func TestDeliverBatchesConcurrently(t *testing.T) {
	t.Parallel()
	f := setupWith(t, 1e6, 1e6, func(c *messagestest.Config) {
		c.Delivery.Batch = batch.Config{MaxInFlight: 4, MaxSize: 8}
	})
	type job struct {
		tn db.Tenant
		id int64
	}
	var all []job
	senders := map[db.Tenant][]int64{}
	for o := range 2 {
		tn := f.Org()
		for s := range 5 {
			sid := f.Sender(tn, ph(100*o+s+1))
			senders[tn] = append(senders[tn], sid)
		}
		f.Account(ph(900 + o))
		for i := range 60 {
			sid := senders[tn][i%5]
			all = append(all, job{tn, f.MustSend(tn, sid, ph(900+o), fmt.Sprint(i))})
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(all))
	for i, j := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f.DeliverDone(j.tn, j.id, int64(i+1), 1)
		}()
	}
	wg.Wait()
	for tn := range senders {
		f.FinishHandedOver(tn)
	}
	for i, err := range errs {
		if err != nil {
			t.Errorf("job %d: %v", i, err)
		}
	}
	for _, j := range all {
		if m := f.Get(j.tn, j.id); m.Status != messages.StatusSent {
			t.Fatalf("message %d of %s: %s", j.id, j.tn.Schema, m.Status)
		}
	}
	for tn, sids := range senders {
		for _, sid := range sids {
			if u, d := f.Usage(tn, sid), f.dispatched(tn, sid); u != (messagestest.Usage{Used: 12, Sent: 12}) || d != 12 {
				t.Errorf("sender %d of %s: usage %+v, dispatched %d; want 12 used, sent and dispatched", sid, tn.Schema, u, d)
			}
		}
	}
	if n := f.NetworkCount(); n != len(all) {
		t.Errorf("the network holds %d messages, want %d", n, len(all))
	}
	if f.Net.Multi.Load() == 0 {
		t.Errorf("no batch of more than one message in %d batches", f.Net.Batches.Load())
	}
}

// Fewer than four deliveries waiting are delivered each on its own, side by
// side, through the network's one-message Deliver: no multi-message batch
// reaches the network, and each job gets its own outcome (two messages of
// one conversation are not delivered side by side: the later one waits for
// the earlier one, and its job runs again).
func TestDeliverSmallBatch(t *testing.T) {
	t.Parallel()
	f := setupWith(t, 1000, 1000, func(c *messagestest.Config) {
		c.Delivery.Batch = batch.Config{MaxInFlight: 1}
	})
	tn := f.Org()
	sid := f.Sender(tn, ph(1))
	f.Account(ph(10))
	ids := []int64{f.MustSend(tn, sid, ph(10), "a"), f.MustSend(tn, sid, ph(10), "b"), f.MustSend(tn, sid, ph(10), "c")}
	hold := make(chan struct{})
	f.Net.Hold.Store(&hold)
	errs := make([]error, len(ids)+1)
	var wg sync.WaitGroup
	run := func(i int, id int64) {
		defer wg.Done()
		errs[i] = f.DeliverDone(tn, id, int64(i+1), missingAttempt(id))
	}
	wg.Add(1)
	go run(0, ids[0])
	messagestest.WaitFor(t, func() bool { return f.Net.Batches.Load() == 1 })
	wg.Add(3)
	go run(1, ids[1])
	go run(2, ids[2])
	go run(3, 999_999)
	messagestest.WaitFor(t, func() bool { return f.DeliveriesQueued.Load() == 3 })
	close(hold)
	wg.Wait()
	f.FinishHandedOver(tn)
	for i, id := range ids {
		if errs[i] != nil || f.Get(tn, id).Status != messages.StatusSent {
			t.Errorf("message %d: %v, %s", id, errs[i], f.Get(tn, id).Status)
		}
	}
	if !network.IsPermanent(errs[3]) {
		t.Errorf("job of a missing message: %v, want a permanent error", errs[3])
	}
	if n := f.Net.Multi.Load(); n != 0 {
		t.Errorf("%d network batches of several messages, want none", n)
	}
	if u := f.Usage(tn, sid); u.Sent != 3 || f.dispatched(tn, sid) != 3 {
		t.Errorf("usage %+v, dispatched %d; want 3 sent and dispatched", u, f.dispatched(tn, sid))
	}
}
