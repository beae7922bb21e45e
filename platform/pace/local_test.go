package pace_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/pace"
)

// fakeNow is a settable time source.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeNow) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

func newLocal() (*pace.Local, *fakeNow) {
	clk := &fakeNow{t: time.Date(2026, 11, 22, 14, 0, 0, 0, time.UTC)}
	return pace.NewLocal(pace.LocalConfig{Now: clk.Now}), clk
}

func reserve(t *testing.T, l *pace.Local, key, ticket string, lim pace.Limit) time.Duration {
	t.Helper()
	d, err := l.Take(context.Background(), key, ticket, lim)
	if err != nil {
		t.Fatalf("reserve %s/%s: %v", key, ticket, err)
	}
	return d
}

func TestReserveDelays(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		lim   pace.Limit
		n     int
		wantD []time.Duration
	}{
		{"burst then rate", pace.Limit{Rate: 5, Burst: 5}, 8,
			[]time.Duration{0, 0, 0, 0, 0, 200 * time.Millisecond, 400 * time.Millisecond, 600 * time.Millisecond}},
		{"burst one", pace.Limit{Rate: 2, Burst: 1}, 3,
			[]time.Duration{0, 500 * time.Millisecond, time.Second}},
		{"default contract bucket", pace.Limit{Rate: 20, Burst: 40}, 42,
			append(make([]time.Duration, 40), 50*time.Millisecond, 100*time.Millisecond)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, _ := newLocal()
			for i := range tt.n {
				if got := reserve(t, l, "s", "", tt.lim); got != tt.wantD[i] {
					t.Fatalf("reservation %d: delay %v, want %v", i, got, tt.wantD[i])
				}
			}
		})
	}
}

// Thirty tokens at 5/s with burst 5: the last is due 5 s after the first,
// which is what the delivery throttle test measures end to end.
func TestThirtyTokensTakeFiveSeconds(t *testing.T) {
	t.Parallel()
	l, _ := newLocal()
	var last time.Duration
	for range 30 {
		last = reserve(t, l, "s", "", pace.Limit{Rate: 5, Burst: 5})
	}
	if last != 5*time.Second {
		t.Fatalf("30th token due in %v, want 5s", last)
	}
}

func TestBucketsAreIndependent(t *testing.T) {
	t.Parallel()
	l, _ := newLocal()
	lim := pace.Limit{Rate: 1, Burst: 1}
	reserve(t, l, "a", "", lim)
	if d := reserve(t, l, "a", "", lim); d != time.Second {
		t.Fatalf("second token of a: %v, want 1s", d)
	}
	if d := reserve(t, l, "b", "", lim); d != 0 {
		t.Fatalf("first token of b: %v, want 0 (a's queue must not hold b up)", d)
	}
}

func TestTicketKeepsItsToken(t *testing.T) {
	t.Parallel()
	l, clk := newLocal()
	lim := pace.Limit{Rate: 1, Burst: 1}
	reserve(t, l, "s", "job-1", lim)
	if d := reserve(t, l, "s", "job-2", lim); d != time.Second {
		t.Fatalf("job-2: %v, want 1s", d)
	}
	// job-2 snoozes; it comes back early once, then on time.
	clk.Advance(400 * time.Millisecond)
	if d := reserve(t, l, "s", "job-2", lim); d != 600*time.Millisecond {
		t.Fatalf("job-2 early: %v, want the rest of its own delay 600ms", d)
	}
	clk.Advance(600 * time.Millisecond)
	if d := reserve(t, l, "s", "job-2", lim); d != 0 {
		t.Fatalf("job-2 on time: %v, want 0", d)
	}
	// job-2's token was the one due now: the next job waits a full interval.
	if d := reserve(t, l, "s", "job-3", lim); d != time.Second {
		t.Fatalf("job-3: %v, want 1s", d)
	}
	// job-2's reservation is used up: another attempt pays again.
	if d := reserve(t, l, "s", "job-2", lim); d != 2*time.Second {
		t.Fatalf("job-2 again: %v, want 2s", d)
	}
}

func TestChangedLimitApplies(t *testing.T) {
	t.Parallel()
	l, _ := newLocal()
	reserve(t, l, "s", "", pace.Limit{Rate: 1, Burst: 1})
	if d := reserve(t, l, "s", "", pace.Limit{Rate: 10, Burst: 1}); d != 100*time.Millisecond {
		t.Fatalf("after raising the rate: %v, want 100ms", d)
	}
}

func TestSweepDropsIdleState(t *testing.T) {
	t.Parallel()
	l, clk := newLocal()
	lim := pace.Limit{Rate: 10, Burst: 2}
	for i := range 5 {
		reserve(t, l, "s", string(rune('a'+i)), lim)
	}
	if b, tk := l.Len(); b != 1 || tk != 3 {
		t.Fatalf("before: %d buckets %d tickets, want 1 and 3", b, tk)
	}
	clk.Advance(5 * time.Minute)
	reserve(t, l, "other", "", lim)
	if b, tk := l.Len(); b != 1 || tk != 0 {
		t.Fatalf("after: %d buckets %d tickets, want only the new bucket", b, tk)
	}
}

func TestInvalidLimit(t *testing.T) {
	t.Parallel()
	l, _ := newLocal()
	for _, lim := range []pace.Limit{{Rate: 0, Burst: 1}, {Rate: -1, Burst: 1}, {Rate: 1, Burst: 0}} {
		if _, err := l.Take(context.Background(), "s", "", lim); err == nil {
			t.Errorf("limit %+v accepted", lim)
		}
	}
	if _, err := l.Take(context.Background(), "", "", pace.Limit{Rate: 1, Burst: 1}); err == nil {
		t.Error("empty key accepted")
	}
}

// Concurrent reservations hand out distinct slots: n reservations at rate r
// with burst 1 end (n-1)/r after the first.
func TestConcurrentReservations(t *testing.T) {
	t.Parallel()
	l, _ := newLocal()
	lim := pace.Limit{Rate: 100, Burst: 1}
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[time.Duration]bool{}
	for range 50 {
		wg.Go(func() {
			d, err := l.Take(context.Background(), "s", "", lim)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if seen[d] {
				t.Errorf("slot %v handed out twice", d)
			}
			seen[d] = true
		})
	}
	wg.Wait()
	if !seen[490*time.Millisecond] {
		t.Errorf("last slot missing: %v", seen)
	}
}
