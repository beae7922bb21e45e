package acceptance_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/acceptance"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/batch"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/messages/messagestest"
	"github.com/bizmsg/platform/platform/sendrequest"
)

// Sends that arrive while their tenant's earlier acceptance is in the
// database are accepted together, each with its own answer exactly as a
// lone send's: the message stored with every field as sent (quotes,
// backslashes, braces and newlines included) and its delivery job; a
// sender's messages that do not all fit under its limit go one by one, so
// that exactly its remaining places are taken, in order, and the rest get
// 429; sender errors are those of docs/api.md (§Sending), and a refused
// send stores nothing.
func TestAcceptBatch(t *testing.T) {
	t.Parallel()
	f := setupWith(t, 1000, 1000, func(c *messagestest.Config) {
		c.Acceptance.Batch = batch.Config{MaxInFlight: 1}
	})
	before := f.Batches.Load()
	tn := f.Org()
	capped, open, suspended, byPhone := f.Sender(tn, ph(1)), f.Sender(tn, ph(2)), f.Sender(tn, ph(3)), f.Sender(tn, ph(4))
	f.Account(ph(10))
	ctx := context.Background()
	f.Exec(
		fmt.Sprintf(`UPDATE %s SET daily_limit_override = 5 WHERE id = %d`, tn.Table("sender_numbers"), capped),
		fmt.Sprintf(`UPDATE %s SET status = 'suspended' WHERE id = %d`, tn.Table("sender_numbers"), suspended),
	)
	f.MustSend(tn, capped, ph(10), "first") // capped: 1 of 5 used

	text := func(sender, content string) string {
		return fmt.Sprintf(`{%s,"to_phone":%q,"type":"text","content":%q}`, sender, ph(10), content)
	}
	id := func(sid int64) string { return fmt.Sprintf(`"sender_number_id":%d`, sid) }
	tricky := "q\"uo'te \\ back {br,ace} NULL ش\nline"
	bodies := []string{text(id(capped), "held")}
	for i := range 6 {
		bodies = append(bodies, text(id(capped), fmt.Sprintf("capped %d", i)))
	}
	for i := range 5 {
		bodies = append(bodies, text(id(open), fmt.Sprintf("open %d", i)))
	}
	bodies = append(bodies,
		text(fmt.Sprintf(`"sender_phone":%q`, ph(4)), "by phone 1"),
		text(fmt.Sprintf(`"sender_phone":%q`, ph(4)), "by phone 2"),
		text(fmt.Sprintf(`%s,"sender_phone":%q`, id(open), ph(2)), "id and phone"),
		text(id(open), tricky),
		fmt.Sprintf(`{%s,"to_phone":%q,"type":"image","content":"https://x.example/a.png","file_name":"a.png","file_size":10,"file_type":"image/png","client_reference":"img-1"}`, id(open), ph(10)),
		text(fmt.Sprintf(`%s,"sender_phone":%q`, id(open), ph(4)), "mismatch"),
		text(id(suspended), "suspended"),
		text(id(999), "no such sender"),
	)
	// The capped sender's counter is held, so its next send holds the
	// tenant's only acceptance slot while the others queue.
	results, errs := f.sendBehindLock(tn, capped, bodies)

	if f.Batches.Load() == before {
		t.Fatal("no acceptance statement stored several messages: nothing was batched")
	}
	code := func(err error) string {
		var e *apperr.Error
		if errors.As(err, &e) {
			return e.Code
		}
		return fmt.Sprint(err)
	}
	want := map[int]string{ // index → error code; the rest are accepted
		len(bodies) - 3: "validation_failed", len(bodies) - 2: "sender_not_active", len(bodies) - 1: "sender_not_found",
	}
	// The capped sender had 3 places left for its 6 sends of the batch
	// (which 3 depends on the order they reached the batch).
	limited := 0
	for i := 1; i <= 6; i++ {
		if errs[i] != nil {
			e, _ := apperr.As(errs[i])
			// docs/api.md §Sending: 429 with Retry-After up to the next UTC midnight.
			midnight := time.Date(start.Year(), start.Month(), start.Day()+1, 0, 0, 0, 0, time.UTC)
			if code(errs[i]) != messages.CodeDailyLimitExceeded || e.RetryAfter != midnight.Sub(start) ||
				e.Details["daily_limit"] != 5 {
				t.Errorf("capped send %d: %v (retry after %s, details %v), want daily_limit_exceeded of 5 until midnight",
					i, errs[i], e.RetryAfter, e.Details)
			}
			limited++
			want[i] = messages.CodeDailyLimitExceeded
		}
	}
	if limited != 3 {
		t.Errorf("%d of the capped sender's 6 sends refused, want 3", limited)
	}
	accepted := 0
	for i, err := range errs {
		if c, refused := want[i]; refused {
			if code(err) != c {
				t.Errorf("send %d (%s): %v, want %s", i, bodies[i], err, c)
			}
			continue
		}
		if err != nil {
			t.Errorf("send %d (%s): %v", i, bodies[i], err)
			continue
		}
		accepted++
		sent := struct{ Data json.RawMessage }{results[i].Resource}
		stored, err := json.Marshal(f.Get(tn, results[i].MessageID))
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		_ = json.Unmarshal(sent.Data, &a)
		_ = json.Unmarshal(stored, &b)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("send %d answered %s\nbut stored %s", i, sent.Data, stored)
		}
	}
	if got := f.Get(tn, results[len(bodies)-5].MessageID).Content; got != tricky {
		t.Errorf("content stored as %q, want %q", got, tricky)
	}

	var jobs int
	if err := f.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM river.river_job
		WHERE kind = 'message_delivery' AND args->>'schema' = $1`, tn.Schema).Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	var stored int
	if err := f.DB.Pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s`, tn.Table("messages"))).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if jobs != accepted+1 || stored != accepted+1 {
		t.Errorf("%d messages and %d jobs stored, want %d of each", stored, jobs, accepted+1)
	}
	for _, tc := range []struct {
		sid  int64
		used int
	}{{capped, 5}, {open, 8}, {byPhone, 2}} {
		if u := f.Usage(tn, tc.sid); u.Used != tc.used {
			t.Errorf("sender %d used %d, want %d", tc.sid, u.Used, tc.used)
		}
	}
}

// Fewer than four sends waiting are accepted each by the one-message
// statement, side by side: the batch statement does not run, and each gets
// its own answer.
func TestAcceptSmallBatch(t *testing.T) {
	t.Parallel()
	f := setupWith(t, 1000, 1000, func(c *messagestest.Config) {
		c.Acceptance.Batch = batch.Config{MaxInFlight: 1}
	})
	before := f.Batches.Load()
	tn := f.Org()
	held, other := f.Sender(tn, ph(1)), f.Sender(tn, ph(2))
	f.Account(ph(10))
	f.MustSend(tn, held, ph(10), "first")
	bodies := []string{
		fmt.Sprintf(`{"sender_number_id":%d,"to_phone":%q,"type":"text","content":"held"}`, held, ph(10)),
		fmt.Sprintf(`{"sender_number_id":%d,"to_phone":%q,"type":"text","content":"ok"}`, other, ph(10)),
		fmt.Sprintf(`{"sender_number_id":%d,"sender_phone":%q,"to_phone":%q,"type":"text","content":"mismatch"}`, other, ph(1), ph(10)),
	}
	results, errs := f.sendBehindLock(tn, held, bodies)
	if n := f.Batches.Load() - before; n != 0 {
		t.Errorf("the batch statement ran %d times for two waiting sends", n)
	}
	for i := range 2 {
		if errs[i] != nil || f.Get(tn, results[i].MessageID).Content != []string{"held", "ok"}[i] {
			t.Errorf("send %d: %v", i, errs[i])
		}
	}
	if e, ok := apperr.As(errs[2]); !ok || e.Code != "validation_failed" || len(e.Fields["sender_phone"]) == 0 {
		t.Errorf("send naming two numbers: %v, want validation_failed on sender_phone", errs[2])
	}
}

// sendBehindLock sends bodies[0] to tenant tn while an open transaction
// locks the day counter of sender held, so that this send holds the
// tenant's only acceptance slot (the fixture's AcceptBatch has MaxInFlight
// 1); then the others, which queue behind it; then it commits the lock and
// returns each send's answer.
func (f *fixture) sendBehindLock(tn db.Tenant, held int64, bodies []string) ([]acceptance.Result, []error) {
	f.T.Helper()
	ctx := context.Background()
	tx, err := f.DB.Pool.Begin(ctx)
	if err != nil {
		f.T.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	if _, err := tx.Exec(ctx, fmt.Sprintf(`SELECT 1 FROM %s WHERE sender_number_id = $1 AND side = 'accept' FOR UPDATE`,
		tn.Table("daily_usage")), held); err != nil {
		f.T.Fatal(err)
	}
	results := make([]acceptance.Result, len(bodies))
	errs := make([]error, len(bodies))
	var wg sync.WaitGroup
	var returned atomic.Int32 // sends answered before the commit: refused before they reach the queue
	send := func(i int) {
		defer wg.Done()
		defer returned.Add(1)
		var r sendrequest.SendRequest
		if errs[i] = json.Unmarshal([]byte(bodies[i]), &r); errs[i] == nil {
			results[i], errs[i] = f.Svc.Send(ctx, tn, f.DailyLimit(tn), &r)
		}
	}
	wg.Add(1)
	go send(0)
	dbtest.WaitForLockWaits(f.T, f.DB, 1)
	for i := 1; i < len(bodies); i++ {
		wg.Add(1)
		go send(i)
	}
	// Every other send waits for the held one's run to end, or was
	// refused before it reached the queue (a sender this process does not
	// know is read and checked first).
	messagestest.WaitFor(f.T, func() bool { return f.SendsQueued.Load()+returned.Load() == int32(len(bodies)-1) })
	if err := tx.Commit(ctx); err != nil {
		f.T.Fatal(err)
	}
	wg.Wait()
	return results, errs
}
