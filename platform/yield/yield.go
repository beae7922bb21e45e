// Package yield lets background work give way to foreground work, the way
// a low scheduling priority ("nice") would, for work that shares a machine
// with the database and the send path: a Gate admits background tasks
// freely, except while the machine's CPUs are busy and foreground work is
// active; then it admits Config.BusyRate tasks a second.
//
// The platform's webhook attempts are its background work, and the API and
// the send path (acceptance and delivery) its foreground: a webhook may
// wait, a send should not (docs/design.md, §Webhooks).
// Foreground work must be active for the gate to close, so background work
// alone (a webhook backlog drained after a burst of sends) never throttles
// itself, however busy it makes the machine.
package yield

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/bizmsg/platform/platform/defaults"
)

// Config tunes a Gate. The zero value takes every default.
type Config struct {
	// Interval is the shortest time between two samples of the machine's
	// CPU use: the gate's view of "busy" is at most this old, and a task
	// waiting at a closed gate looks again this often. Default 100 ms.
	Interval time.Duration
	// BusyIdle: the machine becomes busy when its CPUs were idle for less
	// than this share of the time since the previous sample. Default 0.10.
	BusyIdle float64
	// FreeIdle: a busy machine is free again when its CPUs were idle for
	// at least this share of the time since the previous sample, so that
	// the short lulls of a saturated machine do not let a crowd of
	// background tasks through. Default 0.25.
	FreeIdle float64
	// ActiveFor is how long foreground work counts as active after its
	// last Mark. Default 250 ms.
	ActiveFor time.Duration
	// BusyRate is how many tasks a second the gate admits while it is
	// closed (the machine busy and foreground work active), one at a time:
	// background work goes on, slowly, however long the foreground keeps
	// the machine busy. Default 2.
	BusyRate float64
	// CPU returns the machine's cumulative idle and total CPU time, in any
	// unit. Default ProcStat (Linux's /proc/stat). On a machine without
	// it the gate never finds the machine busy and admits every task.
	CPU func() (idle, total uint64, err error)
}

func (c *Config) setDefaults() {
	defaults.Positive(&c.Interval, 100*time.Millisecond)
	defaults.Positive(&c.BusyIdle, 0.10)
	defaults.Positive(&c.FreeIdle, 0.25)
	c.FreeIdle = max(c.FreeIdle, c.BusyIdle)
	defaults.Positive(&c.ActiveFor, 250*time.Millisecond)
	defaults.Positive(&c.BusyRate, 2)
	if c.CPU == nil {
		c.CPU = ProcStat
	}
}

// Gate admits background tasks (Acquire) and learns of foreground work
// (Mark). It is safe for concurrent use; a nil *Gate admits every task at
// once and ignores Mark.
type Gate struct {
	cfg   Config
	start time.Time
	// lastMark is when foreground work was last marked, in nanoseconds
	// since start (0: never).
	lastMark atomic.Int64
	// busyPace admits BusyRate tasks a second while the gate is closed.
	busyPace *rate.Limiter
	// yields counts the tasks that had to wait.
	yields atomic.Int64

	mu sync.Mutex
	// The last sample, when it was taken, and whether it found the
	// machine busy.
	sampledAt         time.Time
	idle, total       uint64
	busy, cpuReadable bool
}

// New returns a Gate.
func New(cfg Config) *Gate {
	cfg.setDefaults()
	g := &Gate{cfg: cfg, start: time.Now(), busyPace: rate.NewLimiter(rate.Limit(cfg.BusyRate), 1)}
	g.idle, g.total, g.cpuReadable = g.readCPU()
	g.sampledAt = time.Now()
	return g
}

// readCPU samples the machine's CPU time; ok is false when it cannot.
func (g *Gate) readCPU() (idle, total uint64, ok bool) {
	idle, total, err := g.cfg.CPU()
	return idle, total, err == nil
}

// Mark tells the gate that foreground work is running now. It costs an
// atomic store.
func (g *Gate) Mark() {
	if g == nil {
		return
	}
	g.lastMark.Store(max(int64(time.Since(g.start)), 1))
}

// Acquire admits one background task, waiting up to wait while the gate is
// closed and its BusyRate spent. It reports false when wait passed or ctx
// ended first. Nothing is held: an admitted task need not say when it ends.
func (g *Gate) Acquire(ctx context.Context, wait time.Duration) bool {
	if g == nil {
		return true
	}
	deadline := time.Now().Add(wait)
	for waited := false; ; waited = true {
		now := time.Now()
		if !g.Closed() || g.busyPace.AllowN(now, 1) {
			return true
		}
		if !waited {
			g.yields.Add(1)
		}
		// Look again when the next task is due at BusyRate, or sooner (the
		// gate may open: the foreground stops, the machine idles).
		pause := g.cfg.Interval
		if tokens := g.busyPace.TokensAt(now); tokens < 1 {
			pause = min(pause, time.Duration((1-tokens)/g.cfg.BusyRate*float64(time.Second)))
		}
		if now.Add(pause).After(deadline) {
			return false
		}
		t := time.NewTimer(max(pause, time.Millisecond))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
}

// Yields is how many tasks have waited at the gate since it was made.
func (g *Gate) Yields() int64 {
	if g == nil {
		return 0
	}
	return g.yields.Load()
}

// Closed reports whether the gate admits only BusyRate tasks a second now:
// the machine is busy and foreground work is active. It samples the CPU
// when the last sample is older than Interval.
func (g *Gate) Closed() bool {
	if g == nil {
		return false
	}
	now := time.Now()
	mark := g.lastMark.Load()
	if mark == 0 || now.Sub(g.start.Add(time.Duration(mark))) > g.cfg.ActiveFor {
		return false // no foreground work: background work goes as fast as it can
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Sub(g.sampledAt) >= g.cfg.Interval {
		idle, total, ok := g.readCPU()
		if ok && g.cpuReadable && total > g.total {
			share := float64(idle-min(idle, g.idle)) / float64(total-g.total)
			if g.busy {
				g.busy = share < g.cfg.FreeIdle
			} else {
				g.busy = share < g.cfg.BusyIdle
			}
		}
		g.idle, g.total, g.cpuReadable, g.sampledAt = idle, total, ok, now
	}
	return g.busy
}
