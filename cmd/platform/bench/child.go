package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// child is a process the benchmark runs: the service (platform serve, api or
// worker) or the bare gin server, from this same binary.
type child struct {
	cmd  *exec.Cmd
	addr string // loopback HTTP address; "" for a worker
	log  *os.File
	done chan error
	// keep keeps the log after a clean stop (a phase failed).
	keep bool
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// startChild runs this binary with args and env added to the environment,
// logging to a temporary file, and waits until GET /readyz on its HTTP
// address answers 200 (when it serves HTTP).
func startChild(ctx context.Context, args []string, env []string, serves bool) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the platform binary: %w", err)
	}
	c := &child{done: make(chan error, 1)}
	if serves {
		if c.addr, err = freeAddr(); err != nil {
			return nil, err
		}
		env = append(env, "HTTP_ADDR="+c.addr)
	}
	if c.log, err = os.CreateTemp("", "platform-bench-"+args[0]+"-*.log"); err != nil {
		return nil, fmt.Errorf("child log: %w", err)
	}
	// Not ctx: the child outlives a cancelled run until c.stop ends it.
	c.cmd = exec.CommandContext(context.WithoutCancel(ctx), exe, args...) //nolint:gosec // G204: this very binary, with the benchmark's own arguments
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stdout = c.log
	c.cmd.Stderr = c.log
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", strings.Join(args, " "), err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	if !serves {
		return c, nil
	}
	deadline := time.Now().Add(60 * time.Second)
	client := &http.Client{Timeout: time.Second}
	ready, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.addr+"/readyz", nil)
	if err != nil {
		_ = c.stop()
		return nil, err
	}
	for {
		select {
		case err := <-c.done:
			c.done <- err
			return nil, fmt.Errorf("%s exited before it was ready (%w); log: %s", args[0], err, c.tail())
		case <-ctx.Done():
			_ = c.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		resp, err := client.Do(ready)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return c, nil
			}
		}
		if time.Now().After(deadline) {
			_ = c.stop()
			return nil, fmt.Errorf("%s not ready after 60s; log: %s", args[0], c.tail())
		}
	}
}

// peakRSS is the child's peak resident set size in bytes (VmHWM).
func (c *child) peakRSS() (int64, error) {
	st, err := procStatus(c.cmd.Process.Pid, "VmHWM")
	if err != nil {
		return 0, fmt.Errorf("read peak rss: %w", err)
	}
	return st["VmHWM"], nil
}

// stopWait is how long stop waits for a child whose environment is env
// after SIGTERM: its SHUTDOWN_TIMEOUT (the last one set, as the child reads
// it; 30 s by default) and 5 s to exit. A value the child would refuse
// leaves the default: such a child never started.
func stopWait(env []string) time.Duration {
	timeout := 30 * time.Second
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "SHUTDOWN_TIMEOUT="); ok {
			if d, err := time.ParseDuration(v); err == nil && d > 0 {
				timeout = d
			}
		}
	}
	return timeout + 5*time.Second
}

// stop asks the child to shut down (SIGTERM), waits up to its stopWait,
// then kills it, and removes its log unless it failed or keep is set (then the error
// names the log).
func (c *child) stop() error {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	wait := stopWait(c.cmd.Env)
	var err error
	select {
	case err = <-c.done:
	case <-time.After(wait):
		_ = c.cmd.Process.Kill()
		err = <-c.done
		err = fmt.Errorf("killed after %s without stopping (%w)", wait, err)
	}
	_ = c.log.Close()
	if err == nil && c.keep {
		return fmt.Errorf("%s stopped cleanly (log kept at %s)", c.cmd.Args[1], c.log.Name())
	}
	if err == nil {
		_ = os.Remove(c.log.Name())
		return nil
	}
	return fmt.Errorf("%s: %w (log kept at %s)", c.cmd.Args[1], err, c.log.Name())
}

// tail returns the end of the child's log.
func (c *child) tail() string {
	b, _ := os.ReadFile(c.log.Name())
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// grabProfile fetches a CPU profile of seconds from a pprof listener into
// path, in the background; wait for the returned channel.
func grabProfile(pprofAddr string, seconds int, path string) <-chan error {
	out := make(chan error, 1)
	// The fetch runs on its own, bounded by the client's timeout.
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet,
		fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", pprofAddr, seconds), nil)
	if err != nil {
		out <- fmt.Errorf("cpu profile: %w", err)
		return out
	}
	go func() {
		// A child that has just started may not listen yet: retry the
		// connection for a few seconds.
		var (
			resp *http.Response
			err  error
		)
		for deadline := time.Now().Add(5 * time.Second); ; {
			resp, err = (&http.Client{Timeout: time.Duration(seconds+30) * time.Second}).Do(req)
			if err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			out <- fmt.Errorf("cpu profile: %w", err)
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			out <- fmt.Errorf("cpu profile: status %d", resp.StatusCode)
			return
		}
		f, err := os.Create(path) //nolint:gosec // G304: the operator's -cpuprofile path
		if err != nil {
			out <- fmt.Errorf("cpu profile: %w", err)
			return
		}
		_, err = f.ReadFrom(resp.Body)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		out <- err
	}()
	return out
}
