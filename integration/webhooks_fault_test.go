package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/app"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/webhooks"
)

// A worker process killed with SIGKILL while webhook deliveries are in
// flight: after a new worker starts, every event reaches the receiver at
// least once, and every request of one event carries the same webhook-id
// and the same body (docs/api.md, §Webhooks: delivery).
func TestWebhookDeliveryAfterWorkerKill(t *testing.T) {
	t.Parallel()
	bin := platformBinary(t)
	e := startMsg(t, Options{Env: map[string]string{"WEBHOOK_ALLOW_PRIVATE": "true"}}) // API only
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	e.recipient(phoneN(2))

	// The receiver holds each request a while, so that some are in flight
	// when the worker dies, and keeps every body by webhook-id.
	var (
		mu     sync.Mutex
		bodies = map[string][][]byte{}
		total  int
	)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		id := r.Header.Get("webhook-id")
		bodies[id] = append(bodies[id], body)
		total++
		mu.Unlock()
		select {
		case <-time.After(400 * time.Millisecond):
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rcv.Close)
	createWebhook(t, e.Env, org.Key(), map[string]any{"url": rcv.URL, "events": []string{"message.sent", "message.delivered"}})

	const n = 15
	for i := range n {
		accepted(t, e.send(org, text(sid, phoneN(2), fmt.Sprintf("kill %d", i))))
	}
	env := append(os.Environ(),
		"DATABASE_URL="+e.DatabaseURL, "DB_MAX_CONNS=4", "LOG_LEVEL=error",
		"WEBHOOK_ALLOW_PRIVATE=true",
		"JWT_SECRET="+strings.Repeat("j", 32), "API_KEY_PEPPER="+strings.Repeat("p", 32),
	)
	cmd := exec.CommandContext(t.Context(), bin, "worker")
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	running := func() int {
		var c int
		if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM river.river_job
			WHERE kind = 'webhook_delivery' AND state = 'running'`).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	received := func() int {
		mu.Lock()
		defer mu.Unlock()
		return total
	}
	poll(t, 60*time.Second, func() (bool, string) {
		got, r := received(), running()
		return got >= 3 && r > 0, fmt.Sprintf("the worker did not get going: %d requests received, %d webhook jobs running", got, r)
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true
	stuck := running()
	t.Logf("killed the worker with %d requests received and %d webhook jobs left running", received(), stuck)
	if stuck == 0 {
		t.Fatal("no webhook delivery was in flight at the kill")
	}

	// A new worker, rescuing jobs that ran longer than 3 s.
	StartWorker(t, e.DatabaseURL, map[string]string{"WEBHOOK_ALLOW_PRIVATE": "true"}, app.Options{
		Clock:    e.Clock,
		Jobs:     queue.Config{JobTimeout: 2 * time.Second, RescueStuckJobsAfter: 3 * time.Second},
		Webhooks: webhooks.Config{Timeout: 2 * time.Second},
	})

	// Every event's every delivery succeeds.
	events := func() (ids []string, pending int) {
		rows, err := e.App.DB.Pool.Query(context.Background(), `SELECT event_id, count(*) FILTER (WHERE state <> 'succeeded')
			FROM `+org.Tenant.Table("webhook_deliveries")+` GROUP BY event_id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var p int
			if err := rows.Scan(&id, &p); err != nil {
				t.Fatal(err)
			}
			ids, pending = append(ids, id), pending+p
		}
		return ids, pending
	}
	var ids []string
	poll(t, 90*time.Second, func() (bool, string) {
		var pending int
		ids, pending = events()
		return len(ids) == 2*n && pending == 0, fmt.Sprintf("%d events of %d, %d deliveries not succeeded", len(ids), 2*n, pending)
	})
	mu.Lock()
	defer mu.Unlock()
	repeated := 0
	for _, id := range ids {
		got := bodies[id]
		if len(got) == 0 {
			t.Errorf("event %s never reached the receiver", id)
			continue
		}
		for _, b := range got[1:] {
			if !bytes.Equal(b, got[0]) {
				t.Errorf("event %s: a retry carried another body:\n%s\n%s", id, got[0], b)
			}
		}
		if len(got) > 1 {
			repeated++
		}
	}
	if len(bodies) != len(ids) {
		t.Errorf("the receiver saw %d webhook-ids for %d events", len(bodies), len(ids))
	}
	t.Logf("%d events delivered at least once after the kill; %d of them more than once, each with its webhook-id and body", len(ids), repeated)
}

// An event whose process never expanded it (a process killed between the
// commit of its change and the expansion: here an event emitted through a
// service already closed, whose commit wakes no expansion) waits in its
// organization's webhook outbox until a worker
// starts: its outbox sweep, run at start, finds the row, and the event
// reaches the receiver (docs/design.md, §Webhooks).
func TestWebhookOutboxSweptByWorker(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{Env: map[string]string{"WEBHOOK_ALLOW_PRIVATE": "true"}}) // API only
	org := e.Register(t)
	got := make(chan string, 4)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("webhook-id")
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rcv.Close)
	createWebhook(t, e, org.Key(), map[string]any{"url": rcv.URL, "events": []string{"message.failed"}})
	ctx := context.Background()
	dead, err := webhooks.New(webhooks.Config{DB: e.App.DB, Jobs: e.App.River, Clock: e.Clock})
	if err != nil {
		t.Fatal(err)
	}
	dead.Close()
	if err := db.BeginFunc(ctx, e.App.DB.Pool, func(tx pgx.Tx) error {
		return dead.Emit(ctx, tx, org.Tenant, webhooks.Event{Type: webhooks.EventMessageFailed, Key: "message:1", Data: map[string]any{"id": 1}})
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-got:
		t.Fatalf("event %s delivered before any worker ran", id)
	case <-time.After(500 * time.Millisecond):
	}
	var waiting int
	if err := e.App.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM `+org.Tenant.Table("webhook_outbox")).Scan(&waiting); err != nil || waiting != 1 {
		t.Fatalf("%d outbox rows (%v), want the event's", waiting, err)
	}
	w := StartWorker(t, e.DatabaseURL, map[string]string{"WEBHOOK_ALLOW_PRIVATE": "true"}, app.Options{Clock: e.Clock})
	select {
	case id := <-got:
		if !strings.HasPrefix(id, "msg_") {
			t.Fatalf("webhook-id %q", id)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the worker's sweep did not deliver the waiting event within 60 s")
	}
	families, err := w.Metrics.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	expanded := -1.0
	for _, f := range families {
		if f.GetName() == "webhook_outbox_rows_expanded_total" {
			expanded = f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	if expanded != 1 {
		t.Fatalf("the worker's webhook_outbox_rows_expanded_total is %v, want 1", expanded)
	}
}
