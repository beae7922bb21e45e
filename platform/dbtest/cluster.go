package dbtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Cluster is a PostgreSQL server of one test's own, made with initdb in a
// temporary directory and run with pg_ctl, for tests that stop the
// database server for real (a crash, a restart, a failover) instead of
// refusing connections to one database of the shared server. It listens
// on 127.0.0.1 only, on a port of its own, with its Unix socket in its
// directory; the test's cleanup stops it and removes the directory.
//
// initdb refuses to run as root, so as root the cluster is made and run as
// the user postgres (the directory is handed to it). The programs are found
// on PATH, else in the newest /usr/lib/postgresql/*/bin, else in
// POSTGRES_BINDIR; without them the test fails saying where it looked.
//
// Durability is what survives a crash of the server, not of the machine
// (fsync is off): a commit the server acknowledged survives pg_ctl stop
// in any mode.
type Cluster struct {
	// Port is the server's TCP port on 127.0.0.1.
	Port int
	// Dir holds the data directory (data), the server's log (server.log)
	// and its Unix socket.
	Dir string

	t    testing.TB
	bin  string
	cred *syscall.Credential

	mu      sync.Mutex
	running bool
}

// NewCluster makes a cluster with initdb (superuser postgres, trust
// authentication), starts it and returns it; the test's cleanup stops it
// (immediate) and removes its directory. It fails the test when initdb or
// pg_ctl cannot be found or the server does not start.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	bin, err := postgresBinDir()
	if err != nil {
		t.Fatalf("dbtest: a private PostgreSQL cluster needs initdb and pg_ctl: %v", err)
	}
	// Not t.TempDir: its parent is private to the test's user, and the
	// server may run as another.
	dir, err := os.MkdirTemp("", "pgcluster-") //nolint:usetesting // t.TempDir's parent is private to this user, the server may run as another
	if err != nil {
		t.Fatalf("dbtest: cluster directory: %v", err)
	}
	c := &Cluster{Dir: dir, t: t, bin: bin}
	t.Cleanup(func() {
		c.stop("immediate", false)
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("dbtest: remove cluster directory: %v", err)
		}
	})
	if os.Geteuid() == 0 {
		c.cred, err = serverUser(dir)
		if err != nil {
			t.Fatalf("dbtest: running as root, and initdb refuses root: %v", err)
		}
	}
	if c.Port, err = freePort(); err != nil {
		t.Fatalf("dbtest: cluster port: %v", err)
	}
	if out, err := c.run(2*time.Minute, "initdb", "-D", c.dataDir(), "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"); err != nil {
		t.Fatalf("dbtest: initdb: %v\n%s", err, out)
	}
	conf := strings.Join([]string{
		"listen_addresses = '127.0.0.1'",
		"port = " + strconv.Itoa(c.Port),
		"unix_socket_directories = '" + dir + "'",
		"fsync = off",
		"full_page_writes = off",
		"max_connections = 100",
		"shared_buffers = 32MB",
		"log_min_messages = warning",
		"",
	}, "\n")
	f, err := os.OpenFile(filepath.Join(c.dataDir(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		t.Fatalf("dbtest: configure the cluster: %v", err)
	}
	c.Start()
	return c
}

// URL returns the URL of database name on the cluster (it need not exist:
// the platform creates its database at start).
func (c *Cluster) URL(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, name)
}

// Start starts the server (pg_ctl start -w) and returns once it accepts
// connections, after crash recovery if it was stopped immediate. It fails
// the test if the server does not start within a minute, e.g. because
// another process took its port while it was down.
func (c *Cluster) Start() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if out, err := c.run(90*time.Second, "pg_ctl", "start", "-w", "-t", "60", "-D", c.dataDir(),
		"-l", filepath.Join(c.Dir, "server.log")); err != nil {
		c.t.Fatalf("dbtest: pg_ctl start: %v\n%s\nserver log:\n%s", err, out, c.Log())
	}
	c.running = true
}

// Stop stops the server with pg_ctl stop -w and the given mode: "fast"
// (sessions are ended with an error, open transactions roll back, then a
// checkpoint) or "immediate" (every server process quits at once, as in a
// crash; the next Start recovers from the WAL). It returns once the server
// has exited and its port refuses connections.
func (c *Cluster) Stop(mode string) {
	c.t.Helper()
	c.stop(mode, true)
}

func (c *Cluster) stop(mode string, must bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.running {
		return
	}
	out, err := c.run(90*time.Second, "pg_ctl", "stop", "-w", "-t", "60", "-m", mode, "-D", c.dataDir())
	if err != nil {
		if must {
			c.t.Fatalf("dbtest: pg_ctl stop -m %s: %v\n%s", mode, err, out)
		}
		c.t.Errorf("dbtest: pg_ctl stop -m %s: %v\n%s", mode, err, out)
		return
	}
	c.running = false
}

// Log returns the server's log so far.
func (c *Cluster) Log() string {
	b, err := os.ReadFile(filepath.Join(c.Dir, "server.log"))
	if err != nil {
		return fmt.Sprintf("(no server log: %v)", err)
	}
	return string(b)
}

func (c *Cluster) dataDir() string { return filepath.Join(c.Dir, "data") }

// run runs one of the server's programs as the cluster's user, in its
// directory, within timeout.
func (c *Cluster) run(timeout time.Duration, prog string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, prog), args...) //nolint:gosec // G204: PostgreSQL's own programs, found by postgresBinDir
	cmd.Dir = c.Dir
	// The server pg_ctl starts outlives pg_ctl: it must not keep the
	// output pipe open, or CombinedOutput would wait for it.
	cmd.WaitDelay = 5 * time.Second
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd.CombinedOutput()
}

// postgresBinDir finds the directory of initdb and pg_ctl.
func postgresBinDir() (string, error) {
	var tried []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("pg_ctl"); err == nil {
			// PATH often holds symbolic links to the real directory,
			// where postgres itself is.
			if resolved, err := filepath.EvalSymlinks(p); err == nil {
				p = resolved
			}
			return filepath.Dir(p), nil
		}
	}
	tried = append(tried, "PATH ("+os.Getenv("PATH")+")")
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	if d := os.Getenv("POSTGRES_BINDIR"); d != "" {
		dirs = append([]string{d}, dirs...)
	} else {
		tried = append(tried, "POSTGRES_BINDIR (unset)")
	}
	for _, d := range dirs {
		if isExecutable(filepath.Join(d, "initdb")) && isExecutable(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
		tried = append(tried, d)
	}
	if len(dirs) == 0 {
		tried = append(tried, "/usr/lib/postgresql/*/bin (none)")
	}
	return "", fmt.Errorf("not found in %s; install the PostgreSQL server (e.g. apt-get install postgresql) or set POSTGRES_BINDIR",
		strings.Join(tried, ", "))
}

// versionOf is the major version in a /usr/lib/postgresql/N/bin path.
func versionOf(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func isExecutable(p string) bool {
	st, err := os.Stat(p) //nolint:gosec // G703: a candidate directory of PostgreSQL's programs, only looked at
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// serverUser returns the credentials of the user postgres and hands dir to
// it.
func serverUser(dir string) (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("no user to run the server as: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("uid of postgres: %w", err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("gid of postgres: %w", err)
	}
	if err := os.Chown(dir, int(uid), int(gid)); err != nil {
		return nil, fmt.Errorf("hand %s to postgres: %w", dir, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// freePort returns a free TCP port on 127.0.0.1 below Linux's default range
// of ephemeral ports (32768-60999), so that no outgoing connection is given
// it while the server is down.
func freePort() (int, error) {
	var last error
	for range 100 {
		p := 20000 + rand.IntN(12000) //nolint:gosec // G404: a port to try, not a secret
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			last = err
			continue
		}
		if err := ln.Close(); err != nil {
			return 0, err
		}
		return p, nil
	}
	return 0, fmt.Errorf("no free port in 100 tries: %w", last)
}
