// Package integration holds end-to-end tests of the platform over real HTTP
// against a real Postgres and real River workers, and the harness they share.
//
// Start gives each test a fresh database and the whole service assembled as in
// production (platform/app), served by an httptest server, with a controllable
// clock.
package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/app"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/config"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/joboutbox"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/network/networktest"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/webhooks"
)

// Env is one test's running service.
type Env struct {
	T      testing.TB
	App    *app.App
	Server *httptest.Server
	Clock  *clock.Fake
	// DatabaseURL is the test's own database.
	DatabaseURL string
	// stop shuts the service down once (Stop, or the test's end).
	stop func()
}

// Options tune Start.
type Options struct {
	// Env overrides configuration variables (as the process environment would).
	Env map[string]string
	// Workers runs River workers in the test's service.
	Workers bool
	// Start is the fake clock's initial time. Default: now.
	Start time.Time
	// Setup, when set, runs after the app is built and before it serves,
	// e.g. to mount test-only routes on App.TenantRoutes.
	Setup func(a *app.App)
	// Jobs tunes the River worker client (e.g. a short RescueStuckJobsAfter).
	Jobs queue.Config
	// Webhooks tunes the webhook service (a short timeout and backoff);
	// WEBHOOK_ALLOW_PRIVATE in Env lets it reach the tests' local receivers.
	Webhooks webhooks.Config
	// Outbox tunes the job outbox (its hooks; app.Options.Outbox).
	Outbox joboutbox.Config
	// OutboxOnOneServer keeps the job outbox on the test's one server
	// (app.Options.OutboxOnOneServer): tests of the outbox itself.
	OutboxOnOneServer bool
	// DatabaseURL, when set, is a database an earlier Start of the same
	// test created (Env.DatabaseURL): the service starts on it as a process
	// restarted on the same database would. Default: a fresh database.
	DatabaseURL string
	// Network, when set, wraps the built-in network of the test's database
	// (on the fake clock); the service uses what it returns. Tests use it to
	// make the network fail where a failure is needed.
	Network func(base network.Network) network.Network
}

// Start assembles the service on a fresh database and serves it until the test
// ends.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	dbURL := opts.DatabaseURL
	if dbURL == "" {
		dbURL = dbtest.NewDatabase(t)
	}
	vars := map[string]string{
		"DATABASE_URL":   dbURL,
		"DB_MAX_CONNS":   "6",
		"JWT_SECRET":     strings.Repeat("j", 32),
		"API_KEY_PEPPER": strings.Repeat("p", 32),
		// Tests fire requests far faster than clients would; the request-rate
		// limit has its own test that sets a small one.
		"API_RATE_LIMIT": "1000000",
		"API_RATE_BURST": "1000000",
	}
	for k, v := range opts.Env {
		vars[k] = v
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	start := opts.Start
	if start.IsZero() {
		start = time.Now()
	}
	clk := clock.NewFake(start)
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	ctx, cancel := context.WithCancel(context.Background())
	appOpts := app.Options{Config: cfg, Logger: log, Clock: clk, Workers: opts.Workers, Jobs: opts.Jobs, Webhooks: opts.Webhooks,
		Outbox: opts.Outbox, OutboxOnOneServer: opts.OutboxOnOneServer}
	if opts.Network != nil {
		appOpts.Network = opts.Network(networktest.Builtin(t, builtin.Config{DB: dbtest.Open(t, dbURL), Clock: clk}))
	}
	a, err := app.New(ctx, appOpts)
	if err != nil {
		cancel()
		t.Fatalf("app: %v", err)
	}
	if opts.Setup != nil {
		opts.Setup(a)
	}
	srv := httptest.NewServer(a.Handler())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, nil) }()
	stop := sync.OnceFunc(func() {
		srv.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("app run: %v", err)
		}
		a.Close()
	})
	t.Cleanup(stop)
	return &Env{T: t, App: a, Server: srv, Clock: clk, DatabaseURL: dbURL, stop: stop}
}

// Stop shuts the service down before the test ends, as a process that
// stops would: the server closes, the workers stop and the pool closes. The
// database stays until the test ends, for a Start with
// Options.DatabaseURL.
func (e *Env) Stop() { e.stop() }

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Response is a finished HTTP exchange.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test on error.
func (r *Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %q: %v", r.Body, err)
	}
}

// Map decodes the body as a JSON object.
func (r *Response) Map(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	r.JSON(t, &m)
	return m
}

// Request is one call to make with Do.
type Request struct {
	Method string
	Path   string
	// Body is marshalled as JSON unless it is a []byte or string (sent as is).
	Body   any
	Header map[string]string
}

// Do performs req against the test server.
func (e *Env) Do(req Request) *Response {
	e.T.Helper()
	var body io.Reader
	contentType := ""
	switch b := req.Body.(type) {
	case nil:
	case []byte:
		body = bytes.NewReader(b)
		contentType = "application/json"
	case string:
		body = strings.NewReader(b)
		contentType = "application/json"
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			e.T.Fatalf("marshal: %v", err)
		}
		body = bytes.NewReader(buf)
		contentType = "application/json"
	}
	hr, err := http.NewRequestWithContext(e.T.Context(), req.Method, e.Server.URL+req.Path, body)
	if err != nil {
		e.T.Fatalf("request: %v", err)
	}
	hr.Header.Set("Accept", "application/json")
	if contentType != "" {
		hr.Header.Set("Content-Type", contentType)
	}
	for k, v := range req.Header {
		hr.Header.Set(k, v)
	}
	resp, err := e.Server.Client().Do(hr)
	if err != nil {
		e.T.Fatalf("%s %s: %v", req.Method, req.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.T.Fatalf("read body: %v", err)
	}
	out := &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
	if err := checkConformance(hr, out); err != nil {
		e.T.Errorf("%v", err)
	}
	return out
}
