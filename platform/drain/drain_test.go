package drain_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/bizmsg/platform/platform/drain"
)

// testBundle is a Runner whose runs report their start on started and wait
// for a word on proceed (nil: end, else fail with it).
type testBundle struct {
	r       *drain.Runner[string]
	started chan string
	proceed chan error

	mu     sync.Mutex
	runs   map[string]int
	errors []error
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{started: make(chan string), proceed: make(chan error), runs: map[string]int{}}
	r, err := drain.New(drain.Config[string]{
		Run: func(ctx context.Context, key string) error {
			b.mu.Lock()
			b.runs[key]++
			b.mu.Unlock()
			select {
			case b.started <- key:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case err := <-b.proceed:
				return err
			case <-ctx.Done():
				return ctx.Err()
			}
		},
		OnError: func(_ string, err error) {
			b.mu.Lock()
			b.errors = append(b.errors, err)
			b.mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	b.r = r
	t.Cleanup(r.Close)
	return b
}

func (b *testBundle) count(key string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.runs[key]
}

// Wakes during a run make one more run, however many they are; a wake
// when none runs starts one; keys drain side by side.
func TestWakesDuringARunMakeOneMore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.r.Wake("a")
	if k := <-b.started; k != "a" {
		t.Fatalf("started %q", k)
	}
	b.r.Wake("a")
	b.r.Wake("a")
	b.r.Wake("b")
	if k := <-b.started; k != "b" {
		t.Fatalf("started %q, want b beside a", k)
	}
	b.proceed <- nil // one of a, b ends
	b.proceed <- nil // the other
	if k := <-b.started; k != "a" {
		t.Fatalf("started %q, want a once more", k)
	}
	b.proceed <- nil
	b.r.Wake("a") // none running: a new run
	if k := <-b.started; k != "a" {
		t.Fatalf("started %q", k)
	}
	b.proceed <- nil
	b.r.Close()
	if a, bb := b.count("a"), b.count("b"); a != 3 || bb != 1 {
		t.Fatalf("runs: a %d, b %d; want 3 and 1", a, bb)
	}
}

// A failed run is reported and ends its drain as a run that succeeded
// does: once more when it was woken during the run, else not at all.
// Close's cancellation is not reported.
func TestFailureIsReportedNotRetried(t *testing.T) {
	t.Parallel()
	b := setup(t)
	boom := errors.New("boom")
	b.r.Wake("a")
	<-b.started
	b.r.Wake("a")
	b.proceed <- boom
	<-b.started // the wake during the failed run
	b.proceed <- boom
	b.r.Wake("a") // none running, or the drain ending: a run either way
	<-b.started
	b.r.Close() // cancels the run waiting on proceed
	b.r.Wake("a")
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.errors) != 2 || !errors.Is(b.errors[0], boom) || !errors.Is(b.errors[1], boom) {
		t.Fatalf("errors %v, want boom twice", b.errors)
	}
	if b.runs["a"] != 3 {
		t.Fatalf("%d runs, want 3", b.runs["a"])
	}
}
