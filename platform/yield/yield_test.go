package yield

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// cpuWith returns a machine whose every sample advances by 100 ticks,
// idleTicks of them idle.
func cpuWith(idleTicks uint64) func() (uint64, uint64, error) {
	var idle, total atomic.Uint64
	return func() (uint64, uint64, error) {
		return idle.Add(idleTicks), total.Add(100), nil
	}
}

// newGate is a gate on a machine idle idleTicks of every 100, sampled every
// millisecond, its foreground active an hour after a Mark.
func newGate(idleTicks uint64, busyRate float64) *Gate {
	return New(Config{Interval: time.Millisecond, ActiveFor: time.Hour, BusyRate: busyRate, CPU: cpuWith(idleTicks)})
}

// acquireN asks for n tasks in turn, each waiting up to wait, and reports
// how many were admitted.
func acquireN(g *Gate, n int, wait time.Duration) int {
	got := 0
	for range n {
		if g.Acquire(context.Background(), wait) {
			got++
		}
	}
	return got
}

func TestGateAdmits(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		idleTicks  uint64 // of every 100
		foreground bool
		want       int // of 5 asked at once (at BusyRate 1/s, one when closed)
	}{
		{"an idle machine with foreground work admits every task", 50, true, 5},
		{"a busy machine without foreground work admits every task", 0, false, 5},
		{"a busy machine with foreground work admits at BusyRate", 5, true, 1},
		{"idle just under the threshold is busy", 9, true, 1},
		{"idle at the threshold is not busy", 10, true, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			g := newGate(c.idleTicks, 1)
			if c.foreground {
				g.Mark()
			}
			time.Sleep(2 * time.Millisecond) // one Interval: the first sample is due
			if got := acquireN(g, 5, 20*time.Millisecond); got != c.want {
				t.Fatalf("admitted %d of 5 tasks, want %d", got, c.want)
			}
			if closed := c.want == 1; g.Closed() != closed {
				t.Fatalf("Closed() = %v, want %v", g.Closed(), closed)
			}
			if wantYields := int64(5 - c.want); g.Yields() != wantYields {
				t.Fatalf("Yields() = %d, want %d", g.Yields(), wantYields)
			}
		})
	}
}

// A task waiting at a closed gate goes in at the next BusyRate turn, or as
// soon as the foreground stops, and not after its context ended.
func TestGateWaits(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		busyRate  float64
		activeFor time.Duration
		cancelled bool
		admitted  bool
		atLeast   time.Duration
		within    time.Duration
	}{
		{"at the busy rate", 50, time.Hour, false, true, 10 * time.Millisecond, 5 * time.Second},
		{"when the foreground stops", 0.01, 50 * time.Millisecond, false, true, 20 * time.Millisecond, 5 * time.Second},
		{"not after its context ended", 0.01, time.Hour, true, false, 0, 5 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			g := New(Config{Interval: time.Millisecond, ActiveFor: c.activeFor, BusyRate: c.busyRate, CPU: cpuWith(0)})
			g.Mark()
			time.Sleep(2 * time.Millisecond)
			if !g.Acquire(context.Background(), time.Second) {
				t.Fatal("the first task was not admitted")
			}
			ctx, cancel := context.WithCancel(context.Background())
			if c.cancelled {
				cancel()
			}
			defer cancel()
			start := time.Now()
			if got := g.Acquire(ctx, 10*time.Second); got != c.admitted {
				t.Fatalf("the second task admitted: %v, want %v", got, c.admitted)
			}
			if took := time.Since(start); took < c.atLeast || took > c.within {
				t.Fatalf("the second task waited %v, want from %v to %v", took, c.atLeast, c.within)
			}
		})
	}
}

// A nil gate admits everything and ignores marks.
func TestNilGate(t *testing.T) {
	t.Parallel()
	var g *Gate
	g.Mark()
	if got := acquireN(g, 3, time.Millisecond); got != 3 || g.Closed() || g.Yields() != 0 {
		t.Fatalf("a nil gate admitted %d of 3, closed %v", got, g.Closed())
	}
}

// A machine whose CPU time cannot be read is never busy.
func TestGateWithoutCPUTime(t *testing.T) {
	t.Parallel()
	g := New(Config{Interval: time.Millisecond, ActiveFor: time.Hour, CPU: func() (uint64, uint64, error) {
		return 0, 0, context.Canceled
	}})
	g.Mark()
	time.Sleep(2 * time.Millisecond)
	if got := acquireN(g, 3, time.Millisecond); got != 3 {
		t.Fatalf("admitted %d of 3 without CPU time, want 3", got)
	}
}

func TestParseCPULine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		line        string
		idle, total uint64
		err         bool
	}{
		{"cpu  120777 37391 40703 64219 2683 0 3152 3047 0 0\n", 64219 + 2683, 120777 + 37391 + 40703 + 64219 + 2683 + 3152 + 3047, false},
		{"cpu 1 2 3 4 5 6 7 8", 9, 36, false},
		{"cpu0 1 2 3 4 5 6 7 8", 0, 0, true},
		{"cpu 1 2 3", 0, 0, true},
		{"cpu 1 2 3 x 5 6 7 8", 0, 0, true},
	}
	for _, c := range cases {
		t.Run(c.line, func(t *testing.T) {
			t.Parallel()
			idle, total, err := parseCPULine(c.line)
			if (err != nil) != c.err || idle != c.idle || total != c.total {
				t.Fatalf("parseCPULine = %d, %d, %v; want %d, %d, error %v", idle, total, err, c.idle, c.total, c.err)
			}
		})
	}
	if _, _, err := ProcStat(); err != nil {
		t.Fatalf("ProcStat on this (Linux) machine: %v", err)
	}
}

// A busy machine is free again only at FreeIdle, not as soon as it is idle
// for BusyIdle: a lull of a saturated machine keeps the gate closed.
func TestGateHysteresis(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		steps []uint64 // the idle ticks of every 100, sample by sample
		want  []bool   // Closed() after each
	}{
		{"a lull between the thresholds keeps a busy machine busy", []uint64{0, 20, 24, 25}, []bool{true, true, true, false}},
		{"a free machine between the thresholds stays free", []uint64{20, 15, 9, 20}, []bool{false, false, true, true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var idleTicks, idle, total atomic.Uint64
			g := New(Config{Interval: time.Millisecond, ActiveFor: time.Hour, CPU: func() (uint64, uint64, error) {
				return idle.Add(idleTicks.Load()), total.Add(100), nil
			}})
			g.Mark()
			for i, step := range c.steps {
				idleTicks.Store(step)
				time.Sleep(2 * time.Millisecond) // one Interval: the next sample is due
				if got := g.Closed(); got != c.want[i] {
					t.Fatalf("after a sample %d%% idle (step %d): Closed() = %v, want %v", step, i, got, c.want[i])
				}
			}
		})
	}
}
