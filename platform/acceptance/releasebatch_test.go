package acceptance_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/acceptance"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/batch"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/messages/messagestest"
	"github.com/bizmsg/platform/platform/webhooks"
)

// failedEvents counts the message.failed events emitted, by schema and
// message key.
type failedEvents struct {
	mu  sync.Mutex
	got map[string]int
}

func (e *failedEvents) Emit(_ context.Context, _ pgx.Tx, t db.Tenant, events ...webhooks.Event) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range events {
		if ev.Type == webhooks.EventMessageFailed {
			e.got[t.Schema+" "+ev.Key]++
		}
	}
	return nil
}

// Scheduled messages of two tenants due at one instant, released by
// concurrent jobs that gather into batches, some refused at release (a
// sender's daily limit, an unreachable recipient, a suspended sender),
// some canceled before and during the release, one message's job run
// twice at once: each message ends queued (counted once, one delivery
// job), failed with its own code and one message.failed event, or
// canceled, exactly as released one at a time.
func TestReleaseBatch(t *testing.T) {
	t.Parallel()
	var largest, calls atomic.Int32
	events := &failedEvents{got: map[string]int{}}
	f := setupWith(t, 1000, 1000, func(c *messagestest.Config) {
		c.Acceptance.Events = events
		c.Acceptance.ReleaseBatch = batch.Config{MaxInFlight: 1, OnQueue: func(int) { calls.Add(1) }, Sizes: batch.ObserverFunc(func(n float64) { storeMax(&largest, int32(n)) })}
	})
	ctx := context.Background()
	type sched struct {
		tn     db.Tenant
		sender int64
		id     int64
		want   string // queued, failed:<code>, canceled
	}
	var all []*sched
	held := map[db.Tenant]int64{}
	sendAt := start.Add(time.Hour)
	for o := range 2 {
		tn := f.Org()
		capped, open, suspended := f.Sender(tn, ph(100*o+1)), f.Sender(tn, ph(100*o+2)), f.Sender(tn, ph(100*o+3))
		for i := range 10 {
			f.Account(ph(1000 + i))
		}
		f.Exec(fmt.Sprintf(`UPDATE %s SET daily_limit_override = 4 WHERE id = %d`, tn.Table("sender_numbers"), capped))
		// The open sender's counter for the release day exists, so that a
		// test transaction can hold it: the first release then waits, and
		// the others gather behind it.
		f.Clock.Set(sendAt)
		f.MustSend(tn, open, ph(1000), "now")
		f.Clock.Set(start)
		held[tn] = open
		add := func(sender int64, to, want string) {
			res, err := f.Send(tn, fmt.Sprintf(`{"sender_number_id":%d,"to_phone":%q,"type":"text","content":"hi","send_at":%q}`,
				sender, to, sendAt.Format(time.RFC3339)), "")
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, &sched{tn: tn, sender: sender, id: res.MessageID, want: want})
		}
		for i := range 6 { // 4 places: the first 4 released, the rest refused
			want := "queued"
			if i >= 4 {
				want = "failed:" + messages.CodeDailyLimitExceeded
			}
			add(capped, ph(1000+i), want)
		}
		for i := range 8 {
			add(open, ph(1000+i), "queued")
		}
		add(open, ph(1999), "failed:"+messages.CodeRecipientUnreachable) // no account
		add(suspended, ph(1001), "failed:sender_not_active")
		f.Exec(fmt.Sprintf(`UPDATE %s SET status = 'suspended' WHERE id = %d`, tn.Table("sender_numbers"), suspended))
	}
	f.Clock.Set(sendAt)
	// Canceled before its release: the batch reads it canceled.
	pre := all[7]
	if _, err := f.Svc.Cancel(ctx, pre.tn, pre.id); err != nil {
		t.Fatal(err)
	}
	pre.want = "canceled"

	// Hold both tenants' open counters: each tenant's first release waits
	// in its statement, and the others queue for the next run.
	tx, err := f.DB.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	for tn, sid := range held {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`SELECT 1 FROM %s WHERE sender_number_id = $1 AND side = 'accept' FOR UPDATE`,
			tn.Table("daily_usage")), sid); err != nil {
			t.Fatal(err)
		}
	}
	statuses := make([]string, len(all)+1)
	errs := make([]error, len(all)+1)
	var wg sync.WaitGroup
	release := func(i int, s *sched) {
		wg.Go(func() { statuses[i], errs[i] = f.Svc.ReleaseScheduled(ctx, s.tn, s.id, false) })
	}
	// Each tenant's first release: one of the held sender's messages.
	firsts := map[db.Tenant]bool{}
	for i, s := range all {
		if s.sender == held[s.tn] && !firsts[s.tn] && s.want == "queued" {
			firsts[s.tn] = true
			release(i, s)
		}
	}
	dbtest.WaitForLockWaits(t, f.DB, 2)
	for i, s := range all {
		if s.sender != held[s.tn] || s.want != "queued" || !firsts[s.tn] {
			release(i, s)
			continue
		}
		firsts[s.tn] = false // that one runs already
	}
	dup := all[3] // its job and a rescued run of it, at once
	release(len(all), dup)
	// Every release has joined its tenant's queue (OnQueue is told once
	// a call) behind the held run.
	messagestest.WaitFor(t, func() bool { return calls.Load() == int32(len(all)+1) })
	// Cancel some as the batches run: each cancel wins (the message stays
	// canceled, never released) or loses (409, released or failed).
	racing := []*sched{all[9], all[10], all[22], all[23]}
	cancels := make([]error, len(racing))
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for i, s := range racing {
		wg.Go(func() { _, cancels[i] = f.Svc.Cancel(ctx, s.tn, s.id) })
	}
	wg.Wait()
	for i, s := range racing {
		var e *apperr.Error
		switch {
		case cancels[i] == nil:
			s.want = "canceled"
		case errors.As(cancels[i], &e) && e.Code == acceptance.CodeNotCancelable:
		default:
			t.Fatalf("cancel of message %d: %v", s.id, cancels[i])
		}
	}
	if largest.Load() < 4 {
		t.Fatalf("the largest release batch held %d messages: nothing was batched", largest.Load())
	}

	type senderKey struct {
		tn db.Tenant
		id int64
	}
	released := map[senderKey]int{} // places taken by sender
	for i, s := range all {
		if errs[i] != nil {
			t.Fatalf("release of message %d: %v", s.id, errs[i])
		}
		m := f.Get(s.tn, s.id)
		got := m.Status
		if m.Status == messages.StatusFailed && m.ErrorCode != nil {
			got += ":" + *m.ErrorCode
		}
		if got != s.want {
			t.Errorf("message %d (sender %d): %s, want %s", s.id, s.sender, got, s.want)
		}
		key := fmt.Sprintf("%s message:%d", s.tn.Schema, s.id)
		failed := 0
		if m.Status == messages.StatusFailed {
			failed = 1
		}
		if events.got[key] != failed {
			t.Errorf("message %d: %d message.failed events, want %d", s.id, events.got[key], failed)
		}
		var jobs int
		if err := f.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM river.river_job WHERE kind = 'message_delivery'
			AND args->>'schema' = $1 AND (args->>'message_id')::bigint = $2`, s.tn.Schema, s.id).Scan(&jobs); err != nil {
			t.Fatal(err)
		}
		want := 0
		if m.Status == messages.StatusQueued {
			want = 1
			released[senderKey{s.tn, s.sender}]++
			if statuses[i] != messages.StatusQueued {
				t.Errorf("message %d released, ReleaseScheduled answered %q", s.id, statuses[i])
			}
		}
		if jobs != want {
			t.Errorf("message %d (%s): %d delivery jobs", s.id, m.Status, jobs)
		}
	}
	if statuses[len(all)] != statuses[3] {
		t.Errorf("the job run twice answered %q and %q", statuses[3], statuses[len(all)])
	}
	for _, s := range all {
		k := senderKey{s.tn, s.sender}
		used, ok := released[k]
		if !ok {
			continue
		}
		if s.sender == held[s.tn] {
			used++ // the send made at once
		}
		if got := f.Usage(s.tn, s.sender).Used; got != used {
			t.Errorf("sender %d: accept counter %d for %d accepted", s.sender, got, used)
		}
		delete(released, k)
	}
}

// storeMax raises v to n when n is larger, safely under concurrent callers.
func storeMax(v *atomic.Int32, n int32) {
	for old := v.Load(); n > old; old = v.Load() {
		if v.CompareAndSwap(old, n) {
			return
		}
	}
}
