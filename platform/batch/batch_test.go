package batch

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type ctxKey struct{}

// recorder is a run function that records its runs and can be held.
type recorder struct {
	mu      sync.Mutex
	runs    [][]int
	running map[string]int
	peak    map[string]int
	hold    chan struct{} // when not nil, runs wait for it to close
	started chan struct{} // receives once per run start, if not nil
}

func newRecorder() *recorder {
	return &recorder{running: map[string]int{}, peak: map[string]int{}}
}

func (r *recorder) run(ctx context.Context, key string, items []int) ([]string, error) {
	r.mu.Lock()
	r.runs = append(r.runs, append([]int(nil), items...))
	r.running[key]++
	r.peak[key] = max(r.peak[key], r.running[key])
	r.mu.Unlock()
	if r.started != nil {
		r.started <- struct{}{}
	}
	if r.hold != nil {
		<-r.hold
	}
	r.mu.Lock()
	r.running[key]--
	r.mu.Unlock()
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = fmt.Sprintf("%s/%d", key, it)
	}
	return out, nil
}

func TestAloneRunsAtOnce(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	b := New(r.run, Config{})
	got, err := b.Do(context.Background(), "a", 7)
	if err != nil || got != "a/7" {
		t.Fatalf("Do = %q, %v; want a/7", got, err)
	}
	if len(r.runs) != 1 || len(r.runs[0]) != 1 {
		t.Fatalf("runs = %v, want one run of one item", r.runs)
	}
	// The run hands the caller its result before it lets go of the key.
	waitFor(t, func() (bool, string) {
		b.mu.Lock()
		left := len(b.keys)
		b.mu.Unlock()
		return left == 0, fmt.Sprintf("keys left after the last run: %d", left)
	})
}

// waitFor re-checks cond every millisecond until it holds, failing the test
// with what cond last said after 5 s.
func waitFor(t *testing.T, cond func() (bool, string)) {
	t.Helper()
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		ok, state := cond()
		if ok {
			return
		}
		select {
		case <-deadline.C:
			t.Fatalf("timed out after 5s: %s", state)
		case <-tick.C:
		}
	}
}

// TestGroupsWaitingCalls holds the first run of a key, queues more calls
// behind it, and checks that they run in as few runs as MaxSize allows, never
// more runs of the key at once than MaxInFlight, each caller getting its own
// result; another key is not held up meanwhile.
func TestGroupsWaitingCalls(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name              string
		maxSize, inFlight int
		waiting           int
		wantRuns          int // runs after the held one
	}{
		{"one run takes all", 64, 1, 30, 1},
		{"split by max size", 10, 1, 30, 3},
		{"two in flight", 64, 2, 30, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRecorder()
			r.hold = make(chan struct{})
			r.started = make(chan struct{}, 100)
			var sizes []int
			var sizesMu sync.Mutex
			var queued queueWatch
			b := New(r.run, Config{MaxSize: tc.maxSize, MaxInFlight: tc.inFlight, OnQueue: queued.onQueue, Sizes: ObserverFunc(func(n float64) {
				sizesMu.Lock()
				defer sizesMu.Unlock()
				sizes = append(sizes, int(n))
			})})
			ctx := context.Background()

			results := make([]string, tc.waiting+tc.inFlight)
			var wg sync.WaitGroup
			do := func(i int) {
				defer wg.Done()
				out, err := b.Do(ctx, "a", i)
				if err != nil {
					t.Errorf("Do(%d): %v", i, err)
				}
				results[i] = out
			}
			// Fill every slot of key a with a held run of one item.
			for i := range tc.inFlight {
				wg.Add(1)
				go do(i)
				<-r.started
			}
			for i := tc.inFlight; i < len(results); i++ {
				wg.Add(1)
				go do(i)
			}
			queued.wait(t, tc.waiting)

			// Key b is not held up by key a's full slots.
			done := make(chan struct{})
			go func() {
				defer close(done)
				if out, err := b.Do(ctx, "b", 1); err != nil || out != "b/1" {
					t.Errorf("Do(b) = %q, %v", out, err)
				}
			}()
			<-r.started
			close(r.hold)
			<-done
			wg.Wait()

			for i, out := range results {
				if want := fmt.Sprintf("a/%d", i); out != want {
					t.Errorf("result %d = %q, want %q", i, out, want)
				}
			}
			if runs := len(r.runs) - tc.inFlight - 1; runs != tc.wantRuns {
				t.Errorf("%d runs for the %d waiting calls, want %d (runs %v)", runs, tc.waiting, tc.wantRuns, r.runs)
			}
			for _, run := range r.runs {
				if len(run) > tc.maxSize {
					t.Errorf("a run of %d items, max %d", len(run), tc.maxSize)
				}
			}
			sizesMu.Lock()
			if len(sizes) != len(r.runs) {
				t.Errorf("Sizes observed %d runs, there were %d", len(sizes), len(r.runs))
			}
			total := 0
			for _, n := range sizes {
				total += n
			}
			sizesMu.Unlock()
			if total != len(results)+1 {
				t.Errorf("Sizes observed %d items, there were %d", total, len(results)+1)
			}
			if r.peak["a"] > tc.inFlight {
				t.Errorf("%d runs of key a at once, max %d", r.peak["a"], tc.inFlight)
			}
		})
	}
}

// queueWatch is an OnQueue hook that keeps the most items it was told wait
// for a run.
type queueWatch struct{ most atomic.Int64 }

func (w *queueWatch) onQueue(n int) {
	for {
		m := w.most.Load()
		if int64(n) <= m || w.most.CompareAndSwap(m, int64(n)) {
			return
		}
	}
}

// wait waits until OnQueue has told of n items waiting together.
func (w *queueWatch) wait(t *testing.T, n int) {
	t.Helper()
	waitFor(t, func() (bool, string) {
		got := w.most.Load()
		return got == int64(n), fmt.Sprintf("%d calls waiting, want %d", got, n)
	})
}

func TestRunFailures(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tests := []struct {
		name string
		run  Func[string, int, int]
		want string
	}{
		{"error", func(context.Context, string, []int) ([]int, error) { return nil, boom }, "boom"},
		{"panic", func(context.Context, string, []int) ([]int, error) { panic("kaput") }, "batch: run panicked: kaput"},
		{"too few results", func(context.Context, string, []int) ([]int, error) { return nil, nil }, "batch: run returned 0 results for 1 items"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := New(tc.run, Config{})
			_, err := b.Do(context.Background(), "k", 1)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			// The key is usable again after a failed run.
			_, err = b.Do(context.Background(), "k", 2)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("second call: err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestCallerGone: a caller whose context ends returns at once; if its run
// had not started its item is dropped, and a run goes on after the caller
// that started it has gone, with that caller's values.
func TestCallerGone(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	r.hold = make(chan struct{})
	r.started = make(chan struct{}, 10)
	var sawValue, sawCancel atomic.Bool
	run := func(ctx context.Context, key string, items []int) ([]string, error) {
		out, err := r.run(ctx, key, items)
		if items[0] == 1 { // the run the first caller started, checked after it has gone
			sawValue.Store(ctx.Value(ctxKey{}) == "v")
			sawCancel.Store(ctx.Err() != nil)
		}
		return out, err
	}
	var queued queueWatch
	b := New(run, Config{MaxInFlight: 1, OnQueue: queued.onQueue})

	first, cancelFirst := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
	firstDone := make(chan error, 1)
	go func() { _, err := b.Do(first, "a", 1); firstDone <- err }()
	<-r.started

	gone, cancelGone := context.WithCancel(context.Background())
	goneDone := make(chan error, 1)
	go func() { _, err := b.Do(gone, "a", 2); goneDone <- err }()
	queued.wait(t, 1)
	cancelGone()
	if err := <-goneDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("gone caller: err = %v, want context.Canceled", err)
	}
	cancelFirst()
	if err := <-firstDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("first caller: err = %v, want context.Canceled", err)
	}

	stays := make(chan string, 1)
	go func() { out, _ := b.Do(context.Background(), "a", 3); stays <- out }()
	queued.wait(t, 2)
	close(r.hold)
	if out := <-stays; out != "a/3" {
		t.Fatalf("later caller got %q, want a/3", out)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.runs) != 2 || len(r.runs[1]) != 1 || r.runs[1][0] != 3 {
		t.Fatalf("runs = %v, want [[1] [3]]: the gone caller's item dropped", r.runs)
	}
	if !sawValue.Load() || sawCancel.Load() {
		t.Fatalf("run context: value kept %v, cancelled %v; want kept and not cancelled", sawValue.Load(), sawCancel.Load())
	}
}

// DoAll queues its items together, in order: with the key idle they share
// one run (not one alone and the rest after it, as concurrent Do calls
// would), split only by MaxSize, and each gets its own result.
func TestDoAllSharesRuns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		maxSize  int
		items    int
		wantRuns [][]int
	}{
		{"one run", 64, 5, [][]int{{0, 1, 2, 3, 4}}},
		{"split by max size", 2, 5, [][]int{{0, 1}, {2, 3}, {4}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRecorder()
			b := New(r.run, Config{MaxSize: tc.maxSize, MaxInFlight: 1})
			ins := make([]int, tc.items)
			for i := range ins {
				ins[i] = i
			}
			outs, errs := b.DoAll(context.Background(), "a", ins)
			for i := range ins {
				if want := fmt.Sprintf("a/%d", i); outs[i] != want || errs[i] != nil {
					t.Errorf("item %d: %q, %v; want %q", i, outs[i], errs[i], want)
				}
			}
			if fmt.Sprint(r.runs) != fmt.Sprint(tc.wantRuns) {
				t.Errorf("runs %v, want %v", r.runs, tc.wantRuns)
			}
		})
	}
}

// goroutineID is the id of the calling goroutine, from its stack's header
// ("goroutine 42 [running]:").
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	return id
}

// parked reports whether goroutine id is blocked in a worker's wait for its
// next run (workers.loop's select), or gone (its wait ended), read from the
// goroutines' stacks.
func parked(id string) bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.HasPrefix(g, "goroutine "+id+" [") {
			return strings.HasPrefix(g, "goroutine "+id+" [select") && strings.Contains(g, ".(*workers).loop(")
		}
	}
	return true
}

// Runs one after another reuse the goroutine of the run before them (its
// stack already grown), and workers with no run to do exit.
func TestWorkersReused(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]int{}
	var last string
	run := func(_ context.Context, _ string, items []int) ([]int, error) {
		mu.Lock()
		last = goroutineID()
		seen[last]++
		mu.Unlock()
		return items, nil
	}
	b := New(run, Config{})
	b.workers.wait = 200 * time.Millisecond
	const calls = 20
	for i := range calls {
		if _, err := b.Do(context.Background(), "a", i); err != nil {
			t.Fatal(err)
		}
		// The next call comes once the run's worker waits for it (or, on a
		// machine too loaded to look within its 200 ms wait, has exited).
		mu.Lock()
		id := last
		mu.Unlock()
		waitFor(t, func() (bool, string) { return parked(id), "worker " + id + " never waited for the next run" })
	}
	mu.Lock()
	goroutines := len(seen)
	mu.Unlock()
	if goroutines > calls/2 {
		t.Errorf("%d runs ran on %d goroutines; want them reused", calls, goroutines)
	}
	waitFor(t, func() (bool, string) {
		n := b.workers.live.Load()
		return n == 0, fmt.Sprintf("%d workers still live long after their idle wait", n)
	})
}

// BenchmarkDeepRun: a lone call whose run goes as deep as a database read
// (about 16 kB of stack).
func BenchmarkDeepRun(b *testing.B) {
	var sink atomic.Int64
	var deep func(n int) int
	deep = func(n int) int {
		var pad [128]byte
		pad[n%128] = byte(n)
		if n == 0 {
			return int(pad[0])
		}
		return deep(n-1) + int(pad[n%128])
	}
	bt := New(func(_ context.Context, _ string, items []int) ([]int, error) {
		sink.Add(int64(deep(100)))
		return items, nil
	}, Config{})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bt.Do(context.Background(), "a", 1); err != nil {
			b.Fatal(err)
		}
	}
}

// countingLoad is a Load that records the runs in flight.
type countingLoad struct {
	inFlight, entered atomic.Int32
}

func (l *countingLoad) Enter() { l.inFlight.Add(1); l.entered.Add(1) }
func (l *countingLoad) Leave() { l.inFlight.Add(-1) }

// Config.Load is told of each run while it is in flight, a panicking one
// included.
func TestLoadCountsRunsInFlight(t *testing.T) {
	t.Parallel()
	load := &countingLoad{}
	r := newRecorder()
	r.hold, r.started = make(chan struct{}), make(chan struct{}, 1)
	b := New(r.run, Config{Load: load})
	done := make(chan error, 1)
	go func() { _, err := b.Do(context.Background(), "a", 1); done <- err }()
	<-r.started
	if got := load.inFlight.Load(); got != 1 {
		t.Fatalf("%d runs in flight while one runs, want 1", got)
	}
	close(r.hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	p := New(func(context.Context, string, []int) ([]int, error) { panic("kaput") }, Config{Load: load})
	if _, err := p.Do(context.Background(), "a", 1); err == nil {
		t.Fatal("a panicking run succeeded")
	}
	if in, entered := load.inFlight.Load(), load.entered.Load(); in != 0 || entered != 2 {
		t.Fatalf("after two runs: %d in flight, %d entered; want 0 and 2", in, entered)
	}
}

// OnQueue tells how many items of a key wait for a run as calls join them:
// none while a run can take them at once, and each call behind a held run
// (and the items of a DoAll together).
func TestOnQueue(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	r.hold = make(chan struct{})
	r.started = make(chan struct{}, 8)
	var mu sync.Mutex
	var told []int
	b := New(r.run, Config{MaxInFlight: 1, OnQueue: func(n int) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, n)
	}})
	ctx := context.Background()
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = b.Do(ctx, "a", 0) })
	<-r.started
	for i := 1; i <= 2; i++ {
		wg.Go(func() { _, _ = b.Do(ctx, "a", i) })
	}
	waitTold := func(n int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			mu.Lock()
			got := len(told)
			mu.Unlock()
			if got == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("OnQueue told %d times, want %d", got, n)
			}
			runtime.Gosched()
		}
	}
	waitTold(3)
	wg.Go(func() { _, _ = b.DoAll(ctx, "a", []int{3, 4}) })
	waitTold(4)
	close(r.hold)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if told[0] != 0 || told[1]+told[2] != 3 || told[3] != 4 {
		t.Fatalf("OnQueue told %v, want 0, then 1 and 2, then 4", told)
	}
}
