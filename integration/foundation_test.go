package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/app"
	"github.com/bizmsg/platform/platform/config"
	"github.com/bizmsg/platform/platform/dbtest"
)

func TestOperationalEndpoints(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	for _, path := range []string{"/healthz", "/readyz"} {
		r := e.Do(Request{Method: http.MethodGet, Path: path})
		if r.Status != http.StatusOK || r.Header.Get("X-Request-Id") == "" {
			t.Fatalf("GET %s = %d %s (request id %q)", path, r.Status, r.Body, r.Header.Get("X-Request-Id"))
		}
	}
	r := e.Do(Request{Method: http.MethodGet, Path: "/metrics"})
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `route="/readyz"`) {
		t.Fatalf("metrics = %d, missing the /readyz route series:\n%.2000s", r.Status, r.Body)
	}
}

func TestErrorEnvelopeOverHTTP(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	r := e.Do(Request{Method: http.MethodGet, Path: "/api/v1/no-such-thing", Header: map[string]string{"X-Request-Id": "client-id-1"}})
	m := r.Map(t)
	if r.Status != http.StatusNotFound || m["code"] != "not_found" || m["message"] == "" || m["request_id"] != "client-id-1" ||
		r.Header.Get("X-Request-Id") != "client-id-1" || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("unknown route = %d %v %v", r.Status, r.Header, m)
	}
	r = e.Do(Request{Method: http.MethodDelete, Path: "/readyz"})
	if m := r.Map(t); r.Status != http.StatusMethodNotAllowed || m["code"] != "method_not_allowed" {
		t.Fatalf("wrong method = %d %v", r.Status, m)
	}
}

// With the database refusing connections, /readyz answers 503 fast instead of
// hanging, and recovers when the database is back.
func TestReadyzDatabaseUnavailable(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	u, err := url.Parse(e.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	admin, err := pgx.Connect(context.Background(), dbtest.ServerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	setAllow := func(allow bool) {
		t.Helper()
		if _, err := admin.Exec(context.Background(), fmt.Sprintf("ALTER DATABASE %s ALLOW_CONNECTIONS %t", pgx.Identifier{name}.Sanitize(), allow)); err != nil {
			t.Fatal(err)
		}
		if !allow {
			if _, err := admin.Exec(context.Background(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", name); err != nil {
				t.Fatal(err)
			}
		}
	}
	setAllow(false)
	start := time.Now()
	r := e.Do(Request{Method: http.MethodGet, Path: "/readyz"})
	if m := r.Map(t); r.Status != http.StatusServiceUnavailable || m["code"] == "" || strings.Contains(string(r.Body), "SQLSTATE") {
		t.Fatalf("readyz with database down = %d %s", r.Status, r.Body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("readyz took %s with the database down; want a fast answer", d)
	}
	setAllow(true)
	poll(t, 10*time.Second, func() (bool, string) {
		r = e.Do(Request{Method: http.MethodGet, Path: "/readyz"})
		return r.Status == http.StatusOK, fmt.Sprintf("readyz did not recover: %d %s", r.Status, r.Body)
	})
}

// A request in flight when shutdown begins (the signal context is cancelled)
// completes, and Run returns cleanly with the workers stopped.
func TestGracefulShutdownCompletesInFlightRequest(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewDatabase(t)
	cfg, err := config.Load(func(k string) string {
		return map[string]string{"DATABASE_URL": dbURL, "JWT_SECRET": strings.Repeat("j", 32), "API_KEY_PEPPER": strings.Repeat("p", 32), "SHUTDOWN_TIMEOUT": "10s"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := app.New(ctx, app.Options{Config: cfg, Workers: true, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// The handler answers only once shutdown has begun, so that the request
	// is in flight when it does, however slowly the machine runs.
	entered, shuttingDown := make(chan struct{}), make(chan struct{})
	a.Engine.GET("/test/slow", func(c *gin.Context) {
		close(entered)
		<-shuttingDown
		c.JSON(http.StatusOK, gin.H{"done": true})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- a.Run(ctx, ln) }()

	type result struct {
		status int
		body   string
		err    error
	}
	got := make(chan result, 1)
	go func() {
		// t.Context(), not ctx: cancelling ctx is the shutdown under test.
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+ln.Addr().String()+"/test/slow", nil)
		if err != nil {
			got <- result{err: err}
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got <- result{status: resp.StatusCode, body: string(b)}
	}()
	<-entered
	cancel() // what SIGTERM does through signal.NotifyContext
	// Shutdown closes the listener first: once a new connection is refused,
	// the server is shutting down with the request in flight.
	poll(t, 15*time.Second, func() (bool, string) {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second)
		if err != nil {
			return true, ""
		}
		_ = c.Close()
		return false, "the listener still accepts connections after the cancel"
	})
	close(shuttingDown)
	res := <-got
	if res.err != nil || res.status != http.StatusOK || !strings.Contains(res.body, `"done":true`) {
		t.Fatalf("in-flight request = %+v, want 200 done", res)
	}
	select {
	case err := <-runErr:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after shutdown")
	}
	// After shutdown the listener is closed: new connections are refused.
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Fatal("listener still accepting after shutdown")
	}
}

var buildOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "platform-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "platform")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/platform").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, nil
})

// platformBinary builds cmd/platform once per test process.
func platformBinary(t *testing.T) string {
	t.Helper()
	bin, err := buildOnce()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// The README's run command on a database that does not exist yet: the binary
// creates and migrates it and serves /readyz 200 within seconds; SIGTERM stops
// it cleanly.
func TestServeCommandOnFreshDatabase(t *testing.T) {
	t.Parallel()
	bin := platformBinary(t)
	u, err := url.Parse(dbtest.ServerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("bizmsg_fresh_%d", time.Now().UnixNano())
	u.Path = "/" + name
	t.Cleanup(func() {
		admin, err := pgx.Connect(context.Background(), dbtest.ServerURL(t))
		if err == nil {
			_, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
			admin.Close(context.Background())
		}
	})
	addr := freeAddr(t)
	cmd := exec.CommandContext(t.Context(), bin, "serve")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+u.String(), "HTTP_ADDR="+addr, "JWT_SECRET=", "API_KEY_PEPPER=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := make(chan string, 1)
	go func() {
		var b strings.Builder
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		logs <- b.String()
	}()
	start := time.Now()
	if !waitReady(t, "http://"+addr+"/readyz", 20*time.Second) {
		_ = cmd.Process.Kill()
		t.Fatalf("serve did not become ready within 20s; logs:\n%s", <-logs)
	}
	t.Logf("serve ready on a new database in %s", time.Since(start).Round(time.Millisecond))
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The logs end when serve closes its stderr by exiting; Wait comes after
	// (it closes the pipe, so calling it first could cut the last lines).
	select {
	case out := <-logs:
		if err := cmd.Wait(); err != nil {
			t.Fatalf("serve exited with %v; logs:\n%s", err, out)
		}
		for _, want := range []string{`"msg":"platform stopped"`, `"variable":"JWT_SECRET"`} {
			if !strings.Contains(out, want) {
				t.Fatalf("logs lack %s:\n%s", want, out)
			}
		}
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("serve did not exit within 15s of SIGTERM")
	}
}

// `platform migrate` migrates every tenant and prints a summary line when its
// output is not a terminal.
func TestMigrateCommandSummary(t *testing.T) {
	t.Parallel()
	bin := platformBinary(t)
	d, dbURL := dbtest.Migrated(t)
	ctx := context.Background()
	for range 3 {
		if _, err := d.Pool.Exec(ctx, "INSERT INTO central.organizations (name) VALUES ('o')"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Pool.Exec(ctx, "UPDATE central.organizations SET schema_name = 'tenant_' || id"); err != nil {
		t.Fatal(err)
	}
	run := func() string {
		cmd := exec.CommandContext(ctx, bin, "migrate")
		cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "LOG_LEVEL=warn")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("migrate: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := run(); !strings.Contains(out, "tenant schemas: 3 total, 3 migrated, 0 already current, 0 failed") {
		t.Fatalf("first migrate output:\n%s", out)
	}
	if out := run(); !strings.Contains(out, "tenant schemas: 3 total, 0 migrated, 3 already current, 0 failed") {
		t.Fatalf("second migrate output:\n%s", out)
	}
}

// With every pool connection taken (a database too slow to give them back),
// requests answer 503 once DB_ACQUIRE_TIMEOUT has passed instead of waiting
// for a connection as long as their client does, on every path: API-key
// authentication and the tenant read (GET /api/v1/me), a send, and the
// Central API. A send that would be accepted stores nothing, and is
// accepted once connections are free again.
func TestPoolExhaustedAnswers503Fast(t *testing.T) {
	t.Parallel()
	const maxConns, bound = 2, 300 * time.Millisecond
	e := startMsg(t, Options{Env: map[string]string{
		"DB_MAX_CONNS":       fmt.Sprint(maxConns),
		"DB_ACQUIRE_TIMEOUT": bound.String(),
	}})
	org := e.Register(t)
	e.recipient(phoneN(2))
	send := Request{Method: http.MethodPost, Path: messagesPath, Header: org.Key(),
		Body: text(e.activeSender(org, phoneN(1)), phoneN(2), "hi")}
	calls := []Request{
		{Method: http.MethodGet, Path: tenantMe, Header: org.Key()},
		send,
		{Method: http.MethodGet, Path: "/api/v1/central/me", Header: org.Bearer()},
	}

	pool := e.App.DB.Pool
	var held []interface{ Release() }
	release := func() {
		for _, c := range held {
			c.Release()
		}
		held = nil
	}
	// Deferred, so that it runs before Start's cleanup closes the server,
	// which waits for a request still waiting on the pool (a failure).
	defer release()
	for deadline := time.Now().Add(10 * time.Second); len(held) < maxConns; {
		if time.Now().After(deadline) {
			t.Fatalf("could hold only %d of %d pool connections", len(held), maxConns)
		}
		if c, err := pool.Acquire(context.Background()); err == nil {
			held = append(held, c)
		}
	}
	for _, req := range calls {
		start := time.Now()
		done := make(chan *Response, 1)
		go func() {
			r, err := e.Send(req)
			if err != nil {
				t.Errorf("%s %s: %v", req.Method, req.Path, err)
			}
			done <- r
		}()
		select {
		case r := <-done:
			if r == nil {
				t.FailNow()
			}
			waited := time.Since(start)
			if r.Status != http.StatusServiceUnavailable || r.Map(t)["code"] != "service_unavailable" {
				t.Fatalf("%s %s with the pool exhausted = %d %s, want 503 service_unavailable", req.Method, req.Path, r.Status, r.Body)
			}
			if waited < bound || waited > 3*time.Second {
				t.Fatalf("%s %s answered after %s, want about DB_ACQUIRE_TIMEOUT (%s)", req.Method, req.Path, waited, bound)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s %s still waiting after 10s with the pool exhausted (DB_ACQUIRE_TIMEOUT %s)", req.Method, req.Path, bound)
		}
	}
	release()

	stored := func() int {
		r := e.Do(Request{Method: http.MethodGet, Path: messagesPath, Header: org.Key()})
		if r.Status != http.StatusOK {
			t.Fatalf("messages after the pool freed = %d %s", r.Status, r.Body)
		}
		data, _ := r.Map(t)["data"].([]any)
		return len(data)
	}
	if n := stored(); n != 0 {
		t.Fatalf("%d messages stored by the refused send, want none", n)
	}
	for _, c := range []struct {
		req  Request
		want int
	}{{calls[0], http.StatusOK}, {send, http.StatusAccepted}, {calls[2], http.StatusOK}} {
		if r := e.Do(c.req); r.Status != c.want {
			t.Fatalf("%s %s after the pool freed = %d %s, want %d", c.req.Method, c.req.Path, r.Status, r.Body, c.want)
		}
	}
	if n := stored(); n != 1 {
		t.Fatalf("%d messages stored after one accepted send, want 1", n)
	}
}
