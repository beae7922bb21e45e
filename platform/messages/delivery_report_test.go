package messages_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/jobs"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/queue"
) // A message's delivery job shows through Get in its organization's terms:
// waiting before any attempt; after a failed attempt worked by a real River
// worker, retrying with the attempt count, the cause in plain words and the
// next attempt; nothing of River or of the tenant's schema in the resource.
// A message behind it in its conversation, whose job ended, waits.
// Another organization's read of the same id is 404.
func TestDeliveryReport(t *testing.T) {
	t.Parallel()
	f := setup(t, 1000, 1000)
	tn := f.Org()
	other := f.Org()
	sid := f.Sender(tn, ph(1))
	f.Account(ph(2))
	f.Net.Failing.Store(true)
	id := f.MustSend(tn, sid, ph(2), "hello")
	behind := f.MustSend(tn, sid, ph(2), "and then")
	ctx := context.Background()

	readID := func(id int64) messages.Message {
		t.Helper()
		m, err := f.Svc.Get(ctx, tn, id)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	read := func() messages.Message { return readID(id) }
	m := read()
	if m.Delivery == nil || m.Delivery.State != queue.DeliveryWaiting || m.Delivery.Attempts != 0 ||
		m.Delivery.LastError != "" || m.Delivery.NextAttemptAt == nil {
		t.Fatalf("before any attempt: %+v", m.Delivery)
	}

	workers := river.NewWorkers()
	river.AddWorker(workers, &jobs.DeliverWorker{Deliverer: f.Svc, RetryBase: time.Hour, RetryMax: time.Hour})
	client, err := queue.NewClient(queue.Config{Pool: f.DB.Pool, Workers: workers, FetchPollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Stop(context.Background()) })

	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for m = read(); m.Delivery == nil || m.Delivery.State != queue.DeliveryRetrying; m = read() {
		if time.Now().After(deadline) {
			t.Fatalf("no failed attempt recorded: %+v", m.Delivery)
		}
		<-tick.C
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
	// The message behind it in its conversation: its job ended, leaving it
	// to the job that delivers the first (it carries the conversation on);
	// it waits.
	for {
		var state string
		if err := f.DB.Pool.QueryRow(ctx, `SELECT state FROM river.river_job
			WHERE kind = 'message_delivery' AND (args->>'message_id')::bigint = $1`, behind).Scan(&state); err != nil {
			t.Fatal(err)
		}
		if state == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job of the message behind: %s, want completed", state)
		}
		<-tick.C
	}
	if b := readID(behind); b.Status != messages.StatusQueued || b.Delivery == nil || b.Delivery.State != queue.DeliveryWaiting || b.Delivery.NextAttemptAt != nil {
		t.Fatalf("the message behind: %s, delivery %+v; want queued and waiting, no attempt due", b.Status, b.Delivery)
	}
	if _, err := f.Svc.Get(ctx, other, id); !isNotFound(err) {
		t.Fatalf("another organization's read: %v, want 404", err)
	}
}

func isNotFound(err error) bool {
	e, ok := apperr.As(err)
	return ok && e.Kind == apperr.KindNotFound
}
