package db_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
)

// logRecorder is a slog handler that keeps every message and signals the
// first warning, so a test can act while WaitForDatabase is retrying.
type logRecorder struct {
	mu      sync.Mutex
	records []string
	warned  chan struct{}
	once    sync.Once
}

func newLogRecorder() *logRecorder { return &logRecorder{warned: make(chan struct{})} }

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }

func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.Key + "=" + a.Value.String())
		return true
	})
	l.mu.Lock()
	l.records = append(l.records, b.String())
	l.mu.Unlock()
	if r.Level >= slog.LevelWarn {
		l.once.Do(func() { close(l.warned) })
	}
	return nil
}

func (l *logRecorder) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.records...)
}

// closedPort returns a loopback address nothing listens on (a port the
// kernel just handed out and that was closed again).
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// withHost returns rawURL with its host (and port) replaced.
func withHost(t *testing.T, rawURL, host string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = host
	return u.String()
}

// WaitForDatabase fails, and says what it tried, when waiting cannot help
// or the time is up; it retries only what may pass.
func TestWaitForDatabaseGivesUp(t *testing.T) {
	t.Parallel()
	server := dbtest.ServerURL(t)
	tests := []struct {
		name string
		url  string
		// want are substrings of the error; retries is whether a warning
		// was logged before giving up.
		want    []string
		retries bool
	}{
		{
			name:    "nobody listens",
			url:     "postgres://postgres@" + closedPort(t) + "/bizmsg?sslmode=disable",
			want:    []string{"not reachable: tried", "giving up after 1s", "connection refused"},
			retries: true,
		},
		{
			name: "unknown role",
			url:  withUser(t, server, "no_such_role_x"),
			want: []string{"no_such_role_x"},
		},
		{
			name: "malformed url",
			url:  "postgres://postgres@127.0.0.1:notaport/bizmsg",
			want: []string{"parse database url"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			logs := newLogRecorder()
			// A refusal that waiting cannot cure must come back long before
			// a minute's timeout; one that may pass is retried for 1 s.
			timeout := time.Minute
			if tt.retries {
				timeout = time.Second
			}
			start := time.Now()
			err := db.WaitForDatabase(t.Context(), tt.url, db.WaitConfig{
				Timeout: timeout, FirstDelay: 50 * time.Millisecond, Logger: slog.New(logs),
			})
			if err == nil {
				t.Fatal("WaitForDatabase succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			warned := len(logs.lines()) > 0
			if warned != tt.retries {
				t.Fatalf("retried = %v, want %v (logs %q)", warned, tt.retries, logs.lines())
			}
			if !tt.retries && time.Since(start) > 10*time.Second {
				t.Fatalf("a refusal waiting cannot cure took %s", time.Since(start))
			}
			if tt.retries {
				host := mustHost(t, tt.url)
				for _, line := range logs.lines() {
					if !strings.Contains(line, "server="+host) || !strings.Contains(line, "retry_in=") {
						t.Fatalf("log line %q does not say what it tried and when it retries", line)
					}
				}
			}
		})
	}
}

// withUser returns rawURL with its user replaced (and no password).
func withUser(t *testing.T, rawURL, user string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(user)
	return u.String()
}

func mustHost(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// A database server that becomes reachable while WaitForDatabase retries
// is used: the test's proxy to the real server starts listening only after
// the first attempt failed, and the database (missing until then) is
// created through it.
func TestWaitForDatabaseUsesLateServer(t *testing.T) {
	t.Parallel()
	server := dbtest.ServerURL(t)
	target := mustHost(t, server)
	addr := closedPort(t)
	// A database that does not exist yet, so the late server must also
	// create it; dropped at the end.
	u, err := url.Parse(withHost(t, server, addr))
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("bizmsg_late_%d", time.Now().UnixNano())
	u.Path = "/" + name
	t.Cleanup(func() { dropDatabase(t, name) })

	logs := newLogRecorder()
	done := make(chan error, 1)
	go func() {
		done <- db.WaitForDatabase(context.Background(), u.String(), db.WaitConfig{
			Timeout: 60 * time.Second, FirstDelay: 100 * time.Millisecond, MaxDelay: 200 * time.Millisecond,
			Logger: slog.New(logs),
		})
	}()
	select {
	case <-logs.warned:
	case err := <-done:
		t.Fatalf("WaitForDatabase returned %v before the server was up", err)
	}
	proxy(t, addr, target)
	if err := <-done; err != nil {
		t.Fatalf("WaitForDatabase with a late server: %v\nlogs: %q", err, logs.lines())
	}
	d, err := db.Open(context.Background(), db.Config{URL: u.String(), MaxConns: 1})
	if err != nil {
		t.Fatalf("open the database WaitForDatabase created: %v", err)
	}
	d.Close()
	lines := logs.lines()
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "database reachable") {
		t.Fatalf("last log line %q, want the database reachable", last)
	}
}

// proxy forwards TCP connections on addr to target until the test ends.
func proxy(t *testing.T, addr, target string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s (the port was taken meanwhile?): %v", addr, err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			var d net.Dialer
			s, err := d.DialContext(context.Background(), "tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			wg.Go(func() { pipe(c, s) })
		}
	})
}

// pipe copies both ways until either side closes, then closes both.
func pipe(a, b net.Conn) {
	var once sync.Once
	closeBoth := func() { _ = a.Close(); _ = b.Close() }
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = io.Copy(a, b); once.Do(closeBoth) })
	wg.Go(func() { _, _ = io.Copy(b, a); once.Do(closeBoth) })
	wg.Wait()
}

// dropDatabase drops a database the test created on the test server.
func dropDatabase(t *testing.T, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := db.Open(ctx, db.Config{URL: dbtest.ServerURL(t), MaxConns: 1})
	if err != nil {
		t.Errorf("drop %s: %v", name, err)
		return
	}
	defer d.Close()
	if _, err := d.Pool.Exec(ctx, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("drop %s: %v", name, err)
	}
}
