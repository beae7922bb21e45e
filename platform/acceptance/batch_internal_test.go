package acceptance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/senders"
)

// unusedSenders and unusedNetwork satisfy Config; the batch never calls them.
type unusedSenders struct{}

func (unusedSenders) Resolve(context.Context, db.Tenant, senders.SenderRef) (senders.Sender, error) {
	return senders.Sender{}, errors.New("not used")
}

type unusedNetwork struct{ network.Network }

// batchInsertMark begins insert_batch's column list: the tests count a
// batch's inserts by it.
const batchInsertMark = `(created_at, sender_number_id, to_phone, recipient_user_id`

// batchAttempts counts the runs of insert_batch (a batch's messages
// stored), failed ones included.
type batchAttempts struct{ n atomic.Int32 }

func (h *batchAttempts) observe(query string, _ error) {
	if strings.Contains(query, batchInsertMark) {
		h.n.Add(1)
	}
}

// acceptFixture is a Service on a database of its own, with one tenant and
// one active sender, and a count of its batch statements.
type acceptFixture struct {
	d     *db.DB
	one   *db.DB // the service's pool: one connection
	prep  *db.Prepared
	svc   *Service
	tn    db.Tenant
	sid   int64
	batch *batchAttempts
}

func newAcceptFixture(t *testing.T) *acceptFixture {
	t.Helper()
	d, url := dbtest.Migrated(t)
	ctx := context.Background()
	// The service runs on a pool of one connection, so that a statement
	// run twice is certainly prepared (db.Prepared) when it runs again.
	one, err := db.Open(ctx, db.Config{URL: url, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(one.Close)
	var org int64
	if err := d.Pool.QueryRow(ctx, `INSERT INTO central.organizations (name) VALUES ('org') RETURNING id`).Scan(&org); err != nil {
		t.Fatal(err)
	}
	tn, err := db.NewTenant(org, db.SchemaFor(org))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, `UPDATE central.organizations SET schema_name = $2 WHERE id = $1`, org, tn.Schema); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	mig, err := migrate.New(migrate.Config{Pool: d.Pool, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mig.Tenant(ctx, tn); err != nil {
		t.Fatal(err)
	}
	var sid int64
	if err := d.Pool.QueryRow(ctx, fmt.Sprintf(`INSERT INTO %s (phone, status, verification_status, verified_at, activated_at)
		VALUES ('+14155550001', 'active', 'verified', now(), now()) RETURNING id`, tn.Table("sender_numbers"))).Scan(&sid); err != nil {
		t.Fatal(err)
	}
	h := &batchAttempts{}
	prep := dbtest.Prepared(t, db.PreparedConfig{DB: one, Observe: h.observe})
	rc, err := queue.NewClient(queue.Config{Pool: one.Pool})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(Config{Prepared: prep, Jobs: rc, Senders: unusedSenders{}, Network: unusedNetwork{}})
	if err != nil {
		t.Fatal(err)
	}
	return &acceptFixture{d: d, one: one, prep: prep, svc: svc, tn: tn, sid: sid, batch: h}
}

// voice is an acceptance of a voice message of duration seconds, at at.
func (f *acceptFixture) voice(duration int, at time.Time) pendingSend {
	return pendingSend{ref: senders.SenderRef{ID: f.sid}, limit: 1000, r: &messages.Row{Message: messages.Message{ToPhone: "+14155550002", Type: messages.TypeVoice,
		Content: "https://x.example/v.ogg", Duration: &duration, Status: messages.StatusQueued, CreatedAt: at}, UpdatedAt: at}}
}

// A batch whose statement the database refuses for one message's data (a
// duration out of the integer range, which validation keeps out of sends but
// a batch must not count on) falls back to accepting each message on its
// own: only that one fails, the others are stored.
func TestAcceptBatchDataErrorFallsBack(t *testing.T) {
	t.Parallel()
	f := newAcceptFixture(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	batchOf := func(durations ...int) []pendingSend {
		items := make([]pendingSend, len(durations))
		for i, d := range durations {
			items[i] = f.voice(d, now)
		}
		return items
	}
	// Good batches until the batch statement is prepared on the service's
	// connection (its text differs on the runs that notify River's
	// producers): the data error must make it fall back all the same (the
	// database's error, not the driver's).
	prepared := func() bool {
		c, err := f.one.Pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Release()
		return f.prep.PreparedCount(c.Conn()) > 0
	}
	good := 0
	for ; !prepared(); good++ {
		if good == 5 {
			t.Fatal("the batch statement is not prepared after five runs")
		}
		if _, err := f.svc.acceptBatch(ctx, f.tn, batchOf(1, 2, 3, 4, 5)); err != nil {
			t.Fatal(err)
		}
	}
	// One more, so that the bad batch has the text most runs have.
	if _, err := f.svc.acceptBatch(ctx, f.tn, batchOf(1, 2, 3, 4, 5)); err != nil {
		t.Fatal(err)
	}
	good++

	items := batchOf(1, 1<<40, 3, 4, 5)
	out, err := f.svc.acceptBatch(ctx, f.tn, items)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.batch.n.Load(); int(n) != good+1 {
		t.Fatalf("the batch's insert ran %d times, want %d (then each message of the last alone)", n, good+1)
	}
	for i, o := range out {
		if (o.err != nil) != (i == 1) {
			t.Errorf("message %d: %v", i, o.err)
		}
	}
	var n int
	if err := f.d.Pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s`, f.tn.Table("messages"))).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if want := 5*good + len(items) - 1; n != want {
		t.Errorf("%d messages stored, want %d", n, want)
	}
}

// A batch that spans UTC midnight stores each message with its own
// acceptance time and counts it against the limit of its own day.
func TestAcceptBatchAcrossMidnight(t *testing.T) {
	t.Parallel()
	f := newAcceptFixture(t)
	ctx := context.Background()
	before := time.Date(2026, 11, 22, 23, 59, 59, 500_000_000, time.UTC)
	after := time.Date(2026, 11, 23, 0, 0, 0, 250_000_000, time.UTC)
	items := []pendingSend{f.voice(1, before), f.voice(2, before), f.voice(3, after), f.voice(4, after), f.voice(5, after)}
	out, err := f.svc.acceptBatch(ctx, f.tn, items)
	if err != nil {
		t.Fatal(err)
	}
	if f.batch.n.Load() != 1 {
		t.Fatalf("the batch's insert ran %d times, want once", f.batch.n.Load())
	}
	for i, o := range out {
		if o.err != nil {
			t.Fatalf("message %d: %v", i, o.err)
		}
		var stored time.Time
		if err := f.d.Pool.QueryRow(ctx, fmt.Sprintf(`SELECT created_at FROM %s WHERE id = $1`, f.tn.Table("messages")),
			o.val.MessageID).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if want := items[i].r.CreatedAt; !stored.Equal(want) {
			t.Errorf("message %d stored at %s, accepted at %s", i, stored.UTC(), want)
		}
	}
	for day, want := range map[string]int{"2026-11-22": 2, "2026-11-23": 3} {
		var used int
		if err := f.d.Pool.QueryRow(ctx, fmt.Sprintf(`SELECT used FROM %s WHERE sender_number_id = $1 AND day = $2::date AND side = 'accept'`,
			f.tn.Table("daily_usage")), f.sid, day).Scan(&used); err != nil {
			t.Fatalf("counter of %s: %v", day, err)
		}
		if used != want {
			t.Errorf("%s: %d used, want %d", day, used, want)
		}
	}
}
