package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/jobs"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/webhooks"
	"github.com/bizmsg/platform/platform/yield"
)

// fixture is one test's database with the River schema, a fake clock (at
// the real time, so that the reference library's timestamp tolerance
// holds until a test moves it) and an insert-only River client.
type fixture struct {
	t     *testing.T
	db    *db.DB
	clock *clock.Fake
	river *river.Client[pgx.Tx]
	mig   *migrate.Migrator
	quiet *slog.Logger
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	d, _ := dbtest.Migrated(t)
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	rc, err := queue.NewClient(queue.Config{Pool: d.Pool, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	mig, err := migrate.New(migrate.Config{Pool: d.Pool, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, db: d, clock: clock.NewFake(time.Now()), river: rc, mig: mig, quiet: quiet}
}

// org creates an organization with its tenant schema.
func (f *fixture) org() db.Tenant {
	f.t.Helper()
	ctx := context.Background()
	var id int64
	if err := f.db.Pool.QueryRow(ctx, `INSERT INTO central.organizations (name) VALUES ('org') RETURNING id`).Scan(&id); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.db.Pool.Exec(ctx, `UPDATE central.organizations SET schema_name = $2 WHERE id = $1`, id, db.SchemaFor(id)); err != nil {
		f.t.Fatal(err)
	}
	tn, err := db.NewTenant(id, db.SchemaFor(id))
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.mig.Tenant(ctx, tn); err != nil {
		f.t.Fatal(err)
	}
	return tn
}

// service returns a webhook service on the fixture's database and clock,
// closed when the test ends.
func (f *fixture) service(cfg webhooks.Config) *webhooks.Service {
	cfg.DB, cfg.Jobs, cfg.Clock, cfg.Logger = f.db, f.river, f.clock, f.quiet
	svc, err := webhooks.New(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(svc.Close)
	return svc
}

// work runs svc's attempts with a River client of their own until the
// test ends.
func (f *fixture) work(svc *webhooks.Service, maxWorkers int) {
	f.t.Helper()
	workers := river.NewWorkers()
	river.AddWorker(workers, &jobs.WebhookWorker{Attempter: svc})
	client, err := queue.NewClient(queue.Config{Pool: f.db.Pool, Workers: workers,
		Logger: f.quiet, FetchPollInterval: 50 * time.Millisecond, WebhookMaxWorkers: maxWorkers,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := client.Start(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = queue.Stop(ctx, client)
	})
}

// create adds an endpoint at url subscribed to events (nil: every type).
func (f *fixture) create(svc *webhooks.Service, tn db.Tenant, url string, events ...string) webhooks.Endpoint {
	f.t.Helper()
	in := webhooks.EndpointInput{URL: &url}
	if events != nil {
		in.Events = &events
	}
	e, err := svc.Create(context.Background(), tn, in)
	if err != nil {
		f.t.Fatalf("create endpoint %s: %v", url, err)
	}
	return e
}

// emit emits events in a transaction of its own, as a service would in
// the transaction of its change, and expands the outbox at once, so the
// deliveries are there when it returns (the process's own expansion,
// woken by the commit, may have taken the row first).
func (f *fixture) emit(svc *webhooks.Service, tn db.Tenant, events ...webhooks.Event) {
	f.t.Helper()
	ctx := context.Background()
	if err := db.BeginFunc(ctx, f.db.Pool, func(tx pgx.Tx) error {
		return svc.Emit(ctx, tx, tn, events...)
	}); err != nil {
		f.t.Fatalf("emit: %v", err)
	}
	if _, err := svc.ExpandOutbox(ctx, tn); err != nil {
		f.t.Fatalf("expand the outbox: %v", err)
	}
}

// emitLeft emits events through a service on cfg that is closed, as a
// process that ended before it expanded its rows: the commit wakes no
// expansion, so the outbox row stays until someone expands it.
func (f *fixture) emitLeft(cfg webhooks.Config, tn db.Tenant, events ...webhooks.Event) {
	f.t.Helper()
	ctx := context.Background()
	svc := f.service(cfg)
	svc.Close()
	if err := db.BeginFunc(ctx, f.db.Pool, func(tx pgx.Tx) error {
		return svc.Emit(ctx, tx, tn, events...)
	}); err != nil {
		f.t.Fatalf("emit: %v", err)
	}
}

// emitUnordered emits n message.sent events without a key (none waits for
// another), their data 0 to n-1, in one transaction.
func (f *fixture) emitUnordered(svc *webhooks.Service, tn db.Tenant, n int) {
	f.t.Helper()
	events := make([]webhooks.Event, n)
	for i := range events {
		events[i] = webhooks.Event{Type: webhooks.EventMessageSent, Data: i}
	}
	f.emit(svc, tn, events...)
}

// awaitSucceeded waits until the endpoint has n deliveries, all succeeded.
func (f *fixture) awaitSucceeded(svc *webhooks.Service, tn db.Tenant, endpointID int64, n int) {
	f.t.Helper()
	waitFor(f.t, fmt.Sprintf("%d deliveries to succeed", n), func() bool {
		ds := f.deliveries(svc, tn, endpointID)
		return len(ds) == n && !slices.ContainsFunc(ds, func(d webhooks.Delivery) bool { return d.State != webhooks.StateSucceeded })
	})
}

// deliveries returns the endpoint's whole delivery log, oldest first.
func (f *fixture) deliveries(svc *webhooks.Service, tn db.Tenant, endpointID int64) []webhooks.Delivery {
	f.t.Helper()
	page, err := svc.Deliveries(context.Background(), tn, endpointID, webhooks.DeliveryQuery{Limit: "100"})
	if err != nil {
		f.t.Fatalf("deliveries: %v", err)
	}
	out := make([]webhooks.Delivery, 0, len(page.Items))
	for i := len(page.Items) - 1; i >= 0; i-- {
		out = append(out, page.Items[i])
	}
	return out
}

// count returns the number of rows of one of the tenant's tables.
func (f *fixture) count(tn db.Tenant, table string) int {
	f.t.Helper()
	var n int
	if err := f.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM `+tn.Table(table)).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// events returns the number of distinct events t's deliveries carry.
func (f *fixture) events(tn db.Tenant) int {
	f.t.Helper()
	var n int
	if err := f.db.Pool.QueryRow(context.Background(), `SELECT count(DISTINCT event_id) FROM `+tn.Table("webhook_deliveries")).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// jobCount returns the number of webhook delivery jobs River holds.
func (f *fixture) jobCount() int {
	f.t.Helper()
	var n int
	if err := f.db.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM river.river_job WHERE kind = $1`, queue.WebhookDeliveryArgs{}.Kind()).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// waitFor polls cond until it holds, failing the test after 20 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitWithin(t, 20*time.Second, what, cond)
}

// waitWithin polls cond until it holds, failing the test after d.
func waitWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// received is one request a receiver got.
type received struct {
	header http.Header
	body   []byte
	at     time.Time
}

// receiver is an organization's webhook server: it records every request
// and lets serve answer the n-th (from 0); nil serve answers 200.
type receiver struct {
	*httptest.Server
	serve func(n int, w http.ResponseWriter, r *http.Request, body []byte)

	mu  sync.Mutex
	got []received
}

func newServer(t *testing.T, serve func(n int, w http.ResponseWriter, r *http.Request, body []byte)) *receiver {
	t.Helper()
	rc := &receiver{serve: serve}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		n := len(rc.got)
		rc.got = append(rc.got, received{header: r.Header.Clone(), body: body, at: time.Now()})
		rc.mu.Unlock()
		if rc.serve == nil {
			w.WriteHeader(http.StatusOK)
			return
		}
		rc.serve(n, w, r, body)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// newReceiver is newServer answering the status answer gives (200 when
// answer is nil).
func newReceiver(t *testing.T, answer func(n int, r *http.Request, body []byte) int) *receiver {
	t.Helper()
	if answer == nil {
		return newServer(t, nil)
	}
	return newServer(t, func(n int, w http.ResponseWriter, r *http.Request, body []byte) {
		w.WriteHeader(answer(n, r, body))
	})
}

// requests returns what the receiver got so far.
func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

func ptr[T any](v T) *T { return &v }

// fieldErrors returns the field errors of a 422 validation_failed, nil for
// any other error.
func fieldErrors(err error) map[string][]string {
	e, ok := apperr.As(err)
	if !ok || e.Kind != apperr.KindInvalid {
		return nil
	}
	return e.Fields
}

func isNotFound(err error) bool {
	e, ok := apperr.As(err)
	return ok && e.Kind == apperr.KindNotFound
}

func errorCode(err error) string {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// gate is a yield gate on its own fake clock that admits busyRate tasks a
// second while closed.
type gate struct {
	*yield.Gate
	clock *clock.Fake
}

func newGate(t *testing.T, busyRate float64) *gate {
	t.Helper()
	clk := clock.NewFake(time.Now())
	g, err := yield.New(yield.Config{Interval: time.Millisecond, BusyRate: busyRate, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return &gate{Gate: g, clock: clk}
}

// busy starts a foreground run that lasts until free and closes the gate
// (its sample finds the run in flight the whole time).
func (g *gate) busy() {
	g.Enter()
	g.clock.Advance(time.Second)
	if !g.Closed() {
		panic("a gate whose foreground was never idle is open")
	}
}

// free ends the foreground run of busy and opens the gate.
func (g *gate) free() {
	g.Leave()
	g.clock.Advance(time.Second)
	if g.Closed() {
		panic("a gate whose foreground was idle is closed")
	}
}
