package pace_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/pace"
)

// newStores returns n Stores over one migrated database, each on a pool of
// its own, as n processes would have.
func newStores(t *testing.T, n int) []*pace.Store {
	t.Helper()
	_, url := dbtest.Migrated(t)
	stores := make([]*pace.Store, n)
	for i := range stores {
		s, err := pace.New(pace.Config{Pool: dbtest.Open(t, url).Pool})
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = s
	}
	return stores
}

// near reports whether d is within tol of want.
func near(d, want, tol time.Duration) bool { return d >= want-tol && d <= want+tol }

func TestTakeSpacesSlots(t *testing.T) {
	t.Parallel()
	s := newStores(t, 1)[0]
	ctx := context.Background()
	lim := pace.Limit{Rate: 1, Burst: 3}
	var got []time.Duration
	for range 6 {
		d, err := s.Take(ctx, "sender:a", "", lim)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d)
	}
	// Three at once (the burst), then one a second.
	want := []time.Duration{0, 0, 0, time.Second, 2 * time.Second, 3 * time.Second}
	for i := range want {
		if !near(got[i], want[i], 250*time.Millisecond) {
			t.Fatalf("slot %d due in %v, want about %v (all: %v)", i, got[i], want[i], got)
		}
	}
	// Another key has a bucket of its own.
	if d, err := s.Take(ctx, "sender:b", "", lim); err != nil || d != 0 {
		t.Fatalf("another key: %v, %v; want due now", d, err)
	}
}

func TestTakeKeepsATicketsSlot(t *testing.T) {
	t.Parallel()
	s := newStores(t, 1)[0]
	ctx := context.Background()
	lim := pace.Limit{Rate: 0.5, Burst: 1} // a slot every 2 s
	take := func(ticket string) time.Duration {
		t.Helper()
		d, err := s.Take(ctx, "sender:t", ticket, lim)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := take("job:1"); d != 0 {
		t.Fatalf("first slot due in %v, want now", d)
	}
	d2 := take("job:2")
	if !near(d2, 2*time.Second, 300*time.Millisecond) {
		t.Fatalf("second slot due in %v, want about 2s", d2)
	}
	// The job comes back early: the same slot, not a new one.
	again := take("job:2")
	if again > d2 || !near(again, d2, 300*time.Millisecond) {
		t.Fatalf("the ticket's slot came back due in %v, want at most %v", again, d2)
	}
	// Nothing was taken by coming back: the next job's slot is 2 s after
	// job 2's, not 4 s.
	if d3 := take("job:3"); !near(d3, 4*time.Second, 300*time.Millisecond) {
		t.Fatalf("third slot due in %v, want about 4s", d3)
	}
	if _, tickets, err := s.Len(ctx); err != nil || tickets != 2 {
		t.Fatalf("tickets kept: %d, %v; want 2 (jobs 2 and 3)", tickets, err)
	}
}

// A key's burst is allowed at once and the next request refused, with the
// time until a slot is due. The four requests must fall within a fraction
// of a slot's interval for the counts to be exact (a slot refills every
// 500 ms): on a machine so loaded that they do not, the sequence is tried
// again on a fresh key, a few times, rather than judged on a refilled
// bucket.
func TestAllowRefusesPastTheBurst(t *testing.T) {
	t.Parallel()
	s := newStores(t, 1)[0]
	ctx := context.Background()
	lim := pace.Limit{Rate: 2, Burst: 3}
	const tries, within = 5, 200 * time.Millisecond
	for try := range tries {
		key := fmt.Sprintf("key:%d", try)
		began := time.Now()
		var ds []pace.Decision
		for range 4 {
			d, err := s.Allow(ctx, key, lim)
			if err != nil {
				t.Fatal(err)
			}
			ds = append(ds, d)
		}
		if took := time.Since(began); took > within {
			t.Logf("try %d: the four requests took %s, more than %s: trying again", try+1, took, within)
			continue
		}
		for i, d := range ds[:3] {
			if !d.Allowed || d.Remaining != 2-i {
				t.Fatalf("request %d: %+v; want allowed with %d remaining", i, d, 2-i)
			}
		}
		d := ds[3]
		if d.Allowed || d.Remaining != 0 || !near(d.RetryAfter, 500*time.Millisecond, 200*time.Millisecond) ||
			!near(d.Ahead, 1500*time.Millisecond, 200*time.Millisecond) {
			t.Fatalf("request past the burst: %+v; want refused, retry after about 500ms, full in about 1.5s", d)
		}
		// Time itself is what is tested: the bucket refills on the
		// database's clock, which a test cannot advance.
		time.Sleep(d.RetryAfter)
		if d, err := s.Allow(ctx, key, lim); err != nil || !d.Allowed {
			t.Fatalf("after Retry-After: %+v, %v; want allowed", d, err)
		}
		return
	}
	t.Fatalf("in %d tries, four requests never took less than %s: the machine is too loaded to judge the burst", tries, within)
}

// Several processes (pools) taking from one key at once get exactly the
// burst at once and then distinct slots one interval apart: no slot is
// handed out twice, none is skipped.
func TestTakeIsExactAcrossProcesses(t *testing.T) {
	t.Parallel()
	stores := newStores(t, 3)
	ctx := context.Background()
	lim := pace.Limit{Rate: 10, Burst: 5} // 100 ms apart
	const n = 60
	delays := make([]time.Duration, n)
	// when[i] is when take i's slot is due, from the middle of its call
	// (its statement ran somewhere in the call), and slack[i] half the
	// call's length: how far off that can be.
	when := make([]time.Time, n)
	slack := make([]time.Duration, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			start := time.Now()
			d, err := stores[i%len(stores)].Take(ctx, "sender:x", fmt.Sprintf("job:%d", i), lim)
			if err != nil {
				t.Error(err)
			}
			half := time.Since(start) / 2
			delays[i], when[i], slack[i] = d, start.Add(half+d), half
		})
	}
	wg.Wait()
	slices.Sort(delays)
	// Slot k (from 0) is due (k-4)·100 ms after the first, less the time
	// the takes themselves took (all within a second here). Each statement
	// counts from its own start (statement_timestamp()), and one that
	// started before the statement that took the first slot, then waited
	// for the row's lock, counts from earlier: up to that wait more
	// (0.6 ms seen in CI; 20 ms allowed, a fifth of a slot).
	for k, d := range delays {
		want := time.Duration(max(k-4, 0)) * 100 * time.Millisecond
		if d > want+20*time.Millisecond || d < want-time.Second {
			t.Fatalf("slot %d due in %v, want at most %v (all: %v)", k, d, want, delays)
		}
	}
	// Past the burst, the slots are due one interval apart: a gap of two
	// would be a skipped slot. The times are the takes' own, so a take
	// slowed by a busy machine (one is often tens of milliseconds late
	// under the race detector) widens its gaps by its slack.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return when[a].Compare(when[b]) })
	for k := 6; k < n; k++ {
		a, b := order[k-1], order[k]
		if gap := when[b].Sub(when[a]); gap > 150*time.Millisecond+slack[a]+slack[b] {
			t.Fatalf("slots %d and %d are %v apart (takes of %v and %v), want about 100ms", k-1, k, gap, 2*slack[a], 2*slack[b])
		}
	}
}

func TestAllowIsExactAcrossProcesses(t *testing.T) {
	t.Parallel()
	stores := newStores(t, 3)
	ctx := context.Background()
	// A burst of 40 and a slot per 1,000 s after it: exactly 40 of 150
	// concurrent requests are allowed, whichever process serves them.
	lim := pace.Limit{Rate: 0.001, Burst: 40}
	var mu sync.Mutex
	allowed := 0
	var wg sync.WaitGroup
	for i := range 150 {
		wg.Go(func() {
			d, err := stores[i%len(stores)].Allow(ctx, "key:7", lim)
			if err != nil {
				t.Error(err)
				return
			}
			if d.Allowed {
				mu.Lock()
				allowed++
				mu.Unlock()
			} else if d.RetryAfter <= 0 {
				t.Errorf("a refusal without Retry-After: %+v", d)
			}
		})
	}
	wg.Wait()
	if allowed != 40 {
		t.Fatalf("%d requests allowed, want exactly the burst of 40", allowed)
	}
}

func TestSweepForgetsFullBuckets(t *testing.T) {
	t.Parallel()
	s := newStores(t, 1)[0]
	ctx := context.Background()
	if _, err := s.Take(ctx, "sender:fast", "", pace.Limit{Rate: 100, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Take(ctx, "sender:slow", "", pace.Limit{Rate: 0.01, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	// The fast bucket is full again 10 ms later, the slow one in 100 s:
	// sweeps from then on forget the fast one only.
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := s.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		buckets, _, err := s.Len(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if buckets == 1 {
			return
		}
		if buckets == 0 || time.Now().After(deadline) {
			t.Fatalf("%d buckets after the sweep; want only the slow one", buckets)
		}
		<-tick.C
	}
}

func TestLimitValidate(t *testing.T) {
	t.Parallel()
	for _, l := range []pace.Limit{{Rate: 0, Burst: 1}, {Rate: -1, Burst: 1}, {Rate: 1, Burst: 0}} {
		if l.Validate() == nil {
			t.Errorf("%+v validated", l)
		}
	}
	if (pace.Limit{Rate: 1, Burst: 1}).Validate() != nil {
		t.Error("a valid limit refused")
	}
}

// TakeAll spaces the slots it is given in their order, as Takes one after
// the other would, and refuses only the slot it cannot take.
func TestTakeAllSpacesSlotsInOrder(t *testing.T) {
	t.Parallel()
	s := newStores(t, 1)[0]
	lim := pace.Limit{Rate: 1, Burst: 2}
	slots := []pace.Slot{
		{Key: "sender:all", Limit: lim}, {Key: "sender:all", Ticket: "job:2", Limit: lim},
		{Key: "", Limit: lim}, // no key: refused alone
		{Key: "sender:all", Ticket: "job:4", Limit: lim}, {Key: "sender:other", Limit: lim},
		{Key: "sender:all", Limit: pace.Limit{Rate: 0, Burst: 1}}, // no rate: refused alone
	}
	got, errs := s.TakeAll(context.Background(), slots)
	want := []time.Duration{0, 0, 0, time.Second, 0, 0}
	for i := range slots {
		if wantErr := i == 2 || i == 5; (errs[i] != nil) != wantErr {
			t.Fatalf("slot %d: error %v, want one: %v", i, errs[i], wantErr)
		}
		if !near(got[i], want[i], 250*time.Millisecond) {
			t.Fatalf("slot %d due in %v, want about %v (all: %v)", i, got[i], want[i], got)
		}
	}
	// The ticket of the slot due later keeps it.
	if d, err := s.Take(context.Background(), "sender:all", "job:4", lim); err != nil || !near(d, time.Second, 250*time.Millisecond) {
		t.Fatalf("job:4 again: %v, %v; want its slot, about 1s away", d, err)
	}
}
