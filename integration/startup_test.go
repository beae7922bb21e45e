package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/dbtest"
)

// unusedAddr returns a loopback address nothing listens on: a port the
// kernel just handed out, closed again.
func unusedAddr(t *testing.T) string {
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

// On a machine whose database does not answer, the commands that run the
// service retry with a log line per attempt saying what they tried, then
// exit 1 after DB_CONNECT_TIMEOUT with an error naming the server, the
// attempts and the setting, instead of crashing at once.
func TestStartupGivesUpOnUnreachableDatabase(t *testing.T) {
	t.Parallel()
	bin := platformBinary(t)
	addr := unusedAddr(t)
	for _, command := range []string{"serve", "worker", "migrate"} {
		t.Run(command, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), bin, command)
			cmd.Env = append(os.Environ(), "DATABASE_URL=postgres://postgres@"+addr+"/bizmsg?sslmode=disable",
				"DB_CONNECT_TIMEOUT=2s", "HTTP_ADDR=127.0.0.1:0")
			start := time.Now()
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("platform %s against nothing: %v, want exit status 1\n%s", command, err, out)
			}
			if took := time.Since(start); took > 15*time.Second {
				t.Fatalf("platform %s took %s to give up with DB_CONNECT_TIMEOUT=2s", command, took)
			}
			for _, want := range []string{
				`"msg":"database not reachable yet; retrying"`, `"server":"` + addr + `"`, `"retry_in":`,
				"platform: database server " + addr, "not reachable: tried", "connection refused",
				"DB_CONNECT_TIMEOUT=2s: raise it to wait longer",
			} {
				if !strings.Contains(string(out), want) {
					t.Errorf("platform %s output lacks %q:\n%s", command, want, out)
				}
			}
		})
	}
}

// `platform serve` started before its database waits for it: the server
// comes up (here a proxy to the test's Postgres that starts listening only
// once serve has logged its first failed attempt) and serve migrates it
// and becomes ready.
func TestServeWaitsForLateDatabase(t *testing.T) {
	t.Parallel()
	bin := platformBinary(t)
	server, err := url.Parse(dbtest.ServerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	target := server.Host
	dbAddr := unusedAddr(t)
	name := fmt.Sprintf("bizmsg_late_%d", time.Now().UnixNano())
	t.Cleanup(func() {
		admin, err := pgx.Connect(context.Background(), dbtest.ServerURL(t))
		if err == nil {
			_, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
			_ = admin.Close(context.Background())
		}
	})
	late := *server
	late.Host, late.Path = dbAddr, "/"+name
	httpAddr := freeAddr(t)
	cmd := exec.CommandContext(t.Context(), bin, "serve")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+late.String(), "HTTP_ADDR="+httpAddr, "DB_CONNECT_TIMEOUT=60s")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // on a failure before the end
	var (
		mu   sync.Mutex
		logs strings.Builder
	)
	retrying, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			mu.Lock()
			logs.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.Contains(sc.Text(), "database not reachable yet; retrying") {
				once.Do(func() { close(retrying) })
			}
		}
	}()
	logged := func() string { mu.Lock(); defer mu.Unlock(); return logs.String() }
	select {
	case <-retrying:
	case <-time.After(30 * time.Second):
		t.Fatalf("serve logged no retry within 30s:\n%s", logged())
	}
	tcpProxy(t, dbAddr, target)
	if !waitReady(t, "http://"+httpAddr+"/readyz", 60*time.Second) {
		t.Fatalf("serve did not become ready once the database was up:\n%s", logged())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
		if err := cmd.Wait(); err != nil {
			t.Fatalf("serve exited with %v:\n%s", err, logged())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not exit within 30s of SIGTERM:\n%s", logged())
	}
	if !strings.Contains(logged(), `"msg":"database reachable"`) {
		t.Fatalf("serve did not log that the database became reachable:\n%s", logged())
	}
}

// waitReady polls url until it answers 200 or timeout passes.
func waitReady(t *testing.T, url string, timeout time.Duration) bool {
	t.Helper()
	return until(timeout, func() bool {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// tcpProxy forwards TCP connections on addr to target until the test ends,
// when it closes the listener and every connection.
func tcpProxy(t *testing.T, addr, target string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s (taken meanwhile?): %v", addr, err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	track := func(c ...net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		conns = append(conns, c...)
	}
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
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
			track(c, s)
			wg.Go(func() {
				var once sync.Once
				closeBoth := func() { _ = c.Close(); _ = s.Close() }
				var pair sync.WaitGroup
				pair.Go(func() { _, _ = io.Copy(c, s); once.Do(closeBoth) })
				pair.Go(func() { _, _ = io.Copy(s, c); once.Do(closeBoth) })
				pair.Wait()
			})
		}
	})
}
