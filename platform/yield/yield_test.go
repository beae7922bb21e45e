package yield

import (
	"context"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/clock"
)

// interval is the tests' sample interval, on their fake clock (and, for a
// task waiting at a closed gate, how often it looks again in real time).
const interval = time.Millisecond

type testBundle struct {
	gate  *Gate
	clock *clock.Fake
}

// setup returns a gate sampling every interval on a fake clock, admitting
// busyRate tasks a second while closed.
func setup(t *testing.T, busyRate float64) *testBundle {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC))
	g, err := New(Config{Interval: interval, BusyRate: busyRate, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return &testBundle{gate: g, clock: clk}
}

// sample runs the foreground for busyPct percent of 100 intervals (one
// run, then idle) and returns Closed() after it: one sample of that load.
func (b *testBundle) sample(busyPct int) bool {
	span := 100 * interval
	busy := span * time.Duration(busyPct) / 100
	if busy > 0 {
		b.gate.Enter()
		b.clock.Advance(busy)
		b.gate.Leave()
	}
	b.clock.Advance(span - busy)
	return b.gate.Closed()
}

// acquireN asks for n tasks in turn, none waiting, and reports how many
// were admitted.
func acquireN(g *Gate, n int) int {
	got := 0
	for range n {
		if g.Acquire(context.Background(), 0) {
			got++
		}
	}
	return got
}

func TestGateAdmits(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		busyPct int // of the sample's time, a foreground run in flight
		want    int // of 5 asked at once (at BusyRate 1/s, one when closed)
	}{
		{"an idle foreground admits every task", 0, 5},
		{"a foreground busy half the time admits every task", 50, 5},
		{"a busy foreground admits at BusyRate", 95, 1},
		{"idle just under the threshold is busy", 91, 1},
		{"idle at the threshold is not busy", 90, 5},
		{"a foreground never idle admits at BusyRate", 100, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, 1)
			closed := b.sample(c.busyPct)
			if got := acquireN(b.gate, 5); got != c.want {
				t.Fatalf("admitted %d of 5 tasks, want %d", got, c.want)
			}
			if wantClosed := c.want == 1; closed != wantClosed {
				t.Fatalf("Closed() = %v, want %v", closed, wantClosed)
			}
			if wantYields := int64(5 - c.want); b.gate.Yields() != wantYields {
				t.Fatalf("Yields() = %d, want %d", b.gate.Yields(), wantYields)
			}
		})
	}
}

// Overlapping foreground runs count once: the load is the time with any
// run in flight, not the sum of the runs.
func TestGateOverlappingRuns(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	b.gate.Enter() // run A from 0
	b.clock.Advance(50 * interval)
	b.gate.Enter() // run B from 50
	b.clock.Advance(20 * interval)
	b.gate.Leave() // A ends at 70
	b.clock.Advance(15 * interval)
	b.gate.Leave() // B ends at 85: busy 85 of 100
	b.clock.Advance(15 * interval)
	if b.gate.Closed() {
		t.Fatal("a foreground busy 85% of the time (two runs, 105% summed) closed the gate")
	}
	b.gate.Enter()
	b.gate.Enter()
	b.clock.Advance(100 * interval)
	if !b.gate.Closed() {
		t.Fatal("a foreground with runs in flight all the time left the gate open")
	}
	b.gate.Leave()
	b.gate.Leave()
}

// A busy foreground is free again only at FreeIdle, not as soon as it is
// idle for BusyIdle: a lull of a saturated send path keeps the gate closed.
func TestGateHysteresis(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		busy []int  // percent of each sample with a run in flight
		want []bool // Closed() after each
	}{
		{"a lull between the thresholds keeps a busy foreground busy", []int{100, 80, 76, 75}, []bool{true, true, true, false}},
		{"a free foreground between the thresholds stays free", []int{80, 85, 91, 80}, []bool{false, false, true, true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, 1)
			for i, pct := range c.busy {
				if got := b.sample(pct); got != c.want[i] {
					t.Fatalf("after a sample %d%% busy (step %d): Closed() = %v, want %v", pct, i, got, c.want[i])
				}
			}
		})
	}
}

// A task waiting at a closed gate goes in at the next BusyRate turn, or as
// soon as the foreground eases, and not after its context ended.
func TestGateWaits(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		busyRate  float64
		eases     bool
		cancelled bool
		admitted  bool
	}{
		{"at the busy rate", 50, false, false, true},
		{"when the foreground eases", 0.001, true, false, true},
		{"not after its context ended", 0.001, false, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, c.busyRate)
			b.gate.Enter() // a run in flight from here on
			b.clock.Advance(100 * interval)
			if !b.gate.Acquire(context.Background(), 0) || !b.gate.Closed() {
				t.Fatal("the first task was not admitted at the closed gate's rate")
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancelled {
				cancel()
			}
			got := make(chan bool, 1)
			go func() { got <- b.gate.Acquire(ctx, time.Minute) }()
			if c.eases {
				// Once the task waits, the run ends and the next sample
				// finds the foreground idle.
				tick := time.NewTicker(time.Millisecond)
				deadline := time.After(10 * time.Second)
				for b.gate.Yields() == 0 {
					select {
					case <-tick.C:
					case <-deadline:
						t.Fatal("the second task never waited")
					}
				}
				tick.Stop()
				b.gate.Leave()
				b.clock.Advance(100 * interval)
			}
			select {
			case admitted := <-got:
				if admitted != c.admitted {
					t.Fatalf("the second task admitted: %v, want %v", admitted, c.admitted)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the second task was still waiting after 10 s")
			}
		})
	}
}

// A nil gate admits everything and counts nothing.
func TestNilGate(t *testing.T) {
	t.Parallel()
	var g *Gate
	g.Enter()
	g.Leave()
	if got := acquireN(g, 3); got != 3 || g.Closed() || g.Yields() != 0 {
		t.Fatalf("a nil gate admitted %d of 3, closed %v", got, g.Closed())
	}
}

func TestNewChecksThresholds(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{BusyIdle: 1}); err == nil {
		t.Fatal("New took BusyIdle 1: the gate would always be closed")
	}
}
