package integration

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// platformProc is one `platform` process of a test (api, worker, serve),
// run from the binary platformBinary builds, with its log kept for the
// test's messages. The test's cleanup kills it if it still runs, and
// prints its log when the test failed.
type platformProc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	// done is closed when the process has exited; err is then Wait's
	// result.
	done chan struct{}
	err  error

	mu  sync.Mutex
	log strings.Builder
}

// startPlatform starts `platform <command>` with env over the test
// process's environment.
func startPlatform(t *testing.T, name, command string, env map[string]string) *platformProc {
	t.Helper()
	bin := platformBinary(t)
	p := &platformProc{t: t, name: name, done: make(chan struct{})}
	// Killed, if still running, when the test ends.
	p.cmd = exec.CommandContext(t.Context(), bin, command)
	p.cmd.Env = os.Environ()
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s (platform %s): %v", name, command, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.Exited() {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("log of %s (pid %d), last 20 kB:\n%s", name, p.cmd.Process.Pid, tail(p.Log(), 20000))
		}
	})
	return p
}

// Write keeps the process's output.
func (p *platformProc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.Write(b)
}

// Log returns the process's output so far.
func (p *platformProc) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// Pid is the process's id.
func (p *platformProc) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has exited.
func (p *platformProc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the process, failing the test if it has exited.
func (p *platformProc) Signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %s to %s: %v", sig, p.name, err)
	}
}

// WaitExit waits up to timeout for the process to exit and returns how:
// nil for status 0, else an *exec.ExitError (its status or signal). It
// fails the test if the process still runs after timeout.
func (p *platformProc) WaitExit(timeout time.Duration) error {
	p.t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		p.t.Fatalf("%s still running %s after it was told to stop; log:\n%s", p.name, timeout, tail(p.Log(), 20000))
		return nil
	}
}

// Stop sends SIGTERM and fails the test unless the process exits with
// status 0 within timeout.
func (p *platformProc) Stop(timeout time.Duration) {
	p.t.Helper()
	p.Signal(syscall.SIGTERM)
	if err := p.WaitExit(timeout); err != nil {
		p.t.Fatalf("%s exited with %v after SIGTERM, want status 0; log:\n%s", p.name, err, tail(p.Log(), 20000))
	}
}

// WaitLog waits up to timeout for the process to write a line holding
// want, and reports whether it did (false also once the process exited
// without it).
func (p *platformProc) WaitLog(want string, timeout time.Duration) bool {
	until(timeout, func() bool { return strings.Contains(p.Log(), want) || p.Exited() })
	return strings.Contains(p.Log(), want)
}

// MustBeRunning fails the test if the process has exited.
func (p *platformProc) MustBeRunning() {
	p.t.Helper()
	if p.Exited() {
		var ee *exec.ExitError
		how := fmt.Sprint(p.err)
		if errors.As(p.err, &ee) {
			how = ee.String()
		}
		p.t.Fatalf("%s (pid %d) exited (%s) when it should run; log:\n%s", p.name, p.Pid(), how, tail(p.Log(), 20000))
	}
}

// tail is the end of s, at most n bytes, from a line's start.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return "...\n" + s
}
