// Package yield lets background work give way to foreground work, the way
// a low scheduling priority ("nice") would: a Gate admits background tasks
// freely, except while the foreground is busy; then it admits
// Config.BusyRate tasks a second.
//
// The foreground is the service's own, counted where it runs: each
// foreground run is bracketed by Enter and Leave (batch.Config.Load: the
// send path's and the API's shared statements). The foreground is busy when
// it had a run in flight for more than 90% of the last 100 ms, and free
// again when it is idle for at least 25% of a sample. It measures what the
// service's own work waits on, CPU or database, wherever they run: it
// holds in a container (whose CPU quota the machine's /proc/stat does not
// show) and with the database on another host.
//
// The platform's webhook attempts are its background work, and the API and
// the send path (acceptance and delivery) its foreground: a webhook may
// wait, a send should not (docs/design.md, §Webhooks: yielding). Background
// work alone (a webhook backlog drained after a burst of sends) never
// throttles itself, however busy it makes the machine.
package yield

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/defaults"
)

// Config tunes a Gate. The zero value takes every default.
type Config struct {
	// Interval is the shortest time between two samples of the
	// foreground's load: the gate's view of "busy" is at most this old,
	// and a task waiting at a closed gate looks again this often.
	// Default 100 ms.
	Interval time.Duration
	// BusyIdle: the foreground becomes busy when it was idle (no run in
	// flight) for less than this share of the time since the previous
	// sample. Default 0.10.
	BusyIdle float64
	// FreeIdle: a busy foreground is free again when it was idle for at
	// least this share of the time since the previous sample, so that the
	// short lulls of a saturated send path do not let a crowd of
	// background tasks through. Default 0.25; never below BusyIdle.
	FreeIdle float64
	// BusyRate is how many tasks a second the gate admits while it is
	// closed, one at a time: background work goes on, slowly, however long
	// the foreground stays busy. Default 2.
	BusyRate float64
	// Clock times the foreground's runs and the samples. Default
	// clock.Real{} (tests move a clock.Fake instead of sleeping).
	Clock clock.Clock
}

func (c *Config) setDefaults() {
	defaults.Positive(&c.Interval, 100*time.Millisecond)
	defaults.Positive(&c.BusyIdle, 0.10)
	defaults.Positive(&c.FreeIdle, 0.25)
	c.FreeIdle = max(c.FreeIdle, c.BusyIdle)
	defaults.Positive(&c.BusyRate, 2)
	defaults.Clock(&c.Clock)
}

// Gate admits background tasks (Acquire) and counts foreground runs (Enter,
// Leave). It is safe for concurrent use; a nil *Gate admits every task at
// once and counts nothing.
type Gate struct {
	cfg Config
	// busyPace admits BusyRate tasks a second while the gate is closed.
	busyPace *rate.Limiter
	// yields counts the tasks that had to wait.
	yields atomic.Int64

	mu sync.Mutex
	// inFlight is how many foreground runs are in flight, since busySince
	// when there is any; busy is the foreground's time with a run in
	// flight, up to busySince.
	inFlight  int
	busySince time.Time
	busy      time.Duration
	// The last sample: when it was taken, busy then, and whether it found
	// the foreground busy (the gate closed).
	sampledAt    time.Time
	busyAtSample time.Duration
	closed       bool
}

// New returns a Gate.
func New(cfg Config) (*Gate, error) {
	cfg.setDefaults()
	if cfg.BusyIdle >= 1 {
		return nil, errors.New("yield: BusyIdle must be below 1")
	}
	return &Gate{
		cfg:       cfg,
		busyPace:  rate.NewLimiter(rate.Limit(cfg.BusyRate), 1),
		sampledAt: cfg.Clock.Now(),
	}, nil
}

// Enter tells the gate that a foreground run started; Leave, that it
// ended. Each Enter must be followed by one Leave.
func (g *Gate) Enter() {
	if g == nil {
		return
	}
	now := g.cfg.Clock.Now()
	g.mu.Lock()
	if g.inFlight == 0 {
		g.busySince = now
	}
	g.inFlight++
	g.mu.Unlock()
}

// Leave tells the gate that a foreground run that Enter counted ended.
func (g *Gate) Leave() {
	if g == nil {
		return
	}
	now := g.cfg.Clock.Now()
	g.mu.Lock()
	if g.inFlight--; g.inFlight == 0 {
		g.busy += now.Sub(g.busySince)
	}
	g.mu.Unlock()
}

// busyAt is the foreground's time with a run in flight, up to now.
func (g *Gate) busyAt(now time.Time) time.Duration {
	if g.inFlight > 0 {
		return g.busy + now.Sub(g.busySince)
	}
	return g.busy
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
		// gate may open: the foreground eases).
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
// the foreground is busy. It samples the foreground's load when the last
// sample is older than Interval.
func (g *Gate) Closed() bool {
	if g == nil {
		return false
	}
	now := g.cfg.Clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if elapsed := now.Sub(g.sampledAt); elapsed >= g.cfg.Interval {
		busy := g.busyAt(now)
		idle := float64(elapsed - (busy - g.busyAtSample))
		if g.closed {
			g.closed = idle < g.cfg.FreeIdle*float64(elapsed)
		} else {
			g.closed = idle < g.cfg.BusyIdle*float64(elapsed)
		}
		g.sampledAt, g.busyAtSample = now, busy
	}
	return g.closed
}
