package messages_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/jobs"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/senders"
)

// A message's delivery job shows through Get in its organization's terms:
// waiting before any attempt; after a failed attempt worked by a real River
// worker, retrying with the attempt count, the cause in plain words and the
// next attempt; nothing of River or of the tenant's schema in the resource.
// Another organization's read of the same id is 404.
func TestDeliveryReport(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1000, 1000)
	tn := f.org()
	other := f.org()
	sid := f.sender(tn, ph(1))
	f.account(ph(2))
	f.net.failing.Store(true)
	id := f.mustSend(tn, sid, ph(2), "hello")
	ctx := context.Background()

	read := func() messages.Message {
		t.Helper()
		m, err := f.svc.Get(ctx, tn, id)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := read()
	if m.Delivery == nil || m.Delivery.State != queue.DeliveryWaiting || m.Delivery.Attempts != 0 ||
		m.Delivery.LastError != "" || m.Delivery.NextAttemptAt == nil {
		t.Fatalf("before any attempt: %+v", m.Delivery)
	}

	workers := river.NewWorkers()
	river.AddWorker(workers, &jobs.DeliverWorker{Deliverer: f.svc, RetryBase: time.Hour, RetryMax: time.Hour})
	client, err := queue.NewClient(f.db.Pool, workers, nil, queue.Config{FetchPollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Stop(context.Background()) })

	deadline := time.Now().Add(20 * time.Second)
	for m = read(); m.Delivery == nil || m.Delivery.State != queue.DeliveryRetrying; m = read() {
		if time.Now().After(deadline) {
			t.Fatalf("no failed attempt recorded: %+v", m.Delivery)
		}
		time.Sleep(50 * time.Millisecond)
	}
	d := m.Delivery
	if d.Attempts != 1 || d.LastError != queue.ReasonNetwork || d.LastAttemptAt == nil || d.NextAttemptAt == nil {
		t.Fatalf("after a failed attempt: %+v", d)
	}
	if wait := time.Until(*d.NextAttemptAt); wait < 50*time.Minute || wait > 70*time.Minute {
		t.Fatalf("next attempt in %s, want about an hour (the worker's backoff)", wait)
	}
	body, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{tn.Schema, "river", "message_delivery", "timeout"} {
		if strings.Contains(string(body), leak) {
			t.Fatalf("resource shows %q: %s", leak, body)
		}
	}
	if !strings.Contains(string(body), `"delivery":{"state":"retrying","attempts":1,"last_error":"`+queue.ReasonNetwork+`"`) {
		t.Fatalf("resource: %s", body)
	}
	if _, err := f.svc.Get(ctx, other, id); !isNotFound(err) {
		t.Fatalf("another organization's read: %v, want 404", err)
	}
}

func isNotFound(err error) bool {
	e, ok := apperr.As(err)
	return ok && e.Kind == apperr.KindNotFound
}

// Requeue puts a message that failed for lack of network back in the queue
// and takes it out of its day's failed count; a queued message stays queued;
// a refused or sent message, or none, is left alone.
func TestRequeue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1000, 1000)
	tn := f.org()
	sid := f.sender(tn, ph(1))
	f.account(ph(2))
	ctx := context.Background()
	requeue := func(id int64) bool {
		t.Helper()
		var ok bool
		err := pgx.BeginFunc(ctx, f.db.Pool, func(tx pgx.Tx) error {
			var err error
			ok, err = f.svc.Requeue(ctx, tx, tn, id)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	failed := f.mustSend(tn, sid, ph(2), "network down")
	f.net.failing.Store(true)
	_, _ = f.deliver(tn, failed, failed, 5)
	f.net.failing.Store(false)
	if m := f.get(tn, failed); m.Status != messages.StatusFailed {
		t.Fatalf("after the last attempt: %s", m.Status)
	}
	if u := f.usage(tn, sid); u.failed != 1 {
		t.Fatalf("usage before requeue: %+v", u)
	}
	if !requeue(failed) {
		t.Fatal("a network_error message was not requeued")
	}
	m := f.get(tn, failed)
	if m.Status != messages.StatusQueued || m.ErrorCode != nil || m.FailedAt != nil {
		t.Fatalf("after requeue: %+v", m)
	}
	if u := f.usage(tn, sid); u.failed != 0 {
		t.Fatalf("usage after requeue: %+v", u)
	}
	if _, err := f.deliver(tn, failed, failed, 1); err != nil {
		t.Fatalf("delivery after requeue: %v", err)
	}
	if m := f.get(tn, failed); m.Status != messages.StatusSent {
		t.Fatalf("after the retried delivery: %s", m.Status)
	}
	if requeue(failed) {
		t.Fatal("a sent message was requeued")
	}
	queued := f.mustSend(tn, sid, ph(2), "still queued")
	if !requeue(queued) || f.get(tn, queued).Status != messages.StatusQueued {
		t.Fatal("a queued message must stay queued and count as requeueable")
	}
	if requeue(999_999) {
		t.Fatal("no message, yet requeued")
	}
	refused := f.mustSend(tn, sid, ph(2), "refused by the network")
	if _, err := f.db.Pool.Exec(ctx, `UPDATE `+tn.Table("messages")+`
		SET status = 'failed', error_code = 'blocked_sender', failed_at = now() WHERE id = $1`, refused); err != nil {
		t.Fatal(err)
	}
	if requeue(refused) {
		t.Fatal("a message the network refused was requeued")
	}
	if m := f.get(tn, refused); m.Status != messages.StatusFailed || m.ErrorCode == nil || *m.ErrorCode != "blocked_sender" {
		t.Fatalf("refused message after requeue: %+v", m)
	}
}

// A refused acceptance is worded after its transaction: naming an unknown
// sender by phone on a one-connection pool answers sender_not_found, alone
// and with an Idempotency-Key, instead of waiting for the connection the
// refused transaction holds (the wording reads the sender) until the pool's
// acquire timeout turns it into a 503.
func TestRefusalWordedOutsideTheTransaction(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1000, 1000)
	tn := f.org()
	f.account(ph(2))
	ctx := context.Background()
	one, err := db.Open(ctx, db.Config{URL: f.db.Pool.Config().ConnString(), MaxConns: 1, AcquireTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(one.Close)
	rc, err := queue.NewClient(one.Pool, nil, nil, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	snd, err := senders.New(senders.Config{DB: one, Jobs: rc, Network: f.net, Clock: f.clock, Logger: quiet,
		Secret: []byte(strings.Repeat("s", 32))})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := messages.New(messages.Config{DB: one, Prepared: db.NewPrepared(one, db.PreparedConfig{}), Jobs: rc,
		Senders: snd, Network: f.net, Clock: f.clock, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"", "refused-1"} {
		req := &messages.SendRequest{}
		if err := json.Unmarshal([]byte(fmt.Sprintf(`{"sender_phone":%q,"to_phone":%q,"type":"text","content":"x"}`, ph(77), ph(2))), req); err != nil {
			t.Fatal(err)
		}
		req.IdempotencyKey = key
		_, err := svc.Send(ctx, tn, req)
		if e, ok := apperr.As(err); !ok || e.Code != senders.CodeSenderNotFound {
			t.Fatalf("key %q: %v, want %s", key, err, senders.CodeSenderNotFound)
		}
	}
}
