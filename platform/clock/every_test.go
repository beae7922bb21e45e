package clock

import (
	"context"
	"testing"
	"time"
)

// runEvery runs Every in a goroutine and fails t unless it returns within
// a minute.
func runEvery(t *testing.T, ctx context.Context, interval time.Duration, round func(context.Context) bool) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, interval, round)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Every did not return")
	}
}

func TestEveryStopsWhenARoundSaysSo(t *testing.T) {
	rounds := 0
	runEvery(t, context.Background(), time.Millisecond, func(context.Context) bool {
		rounds++
		return rounds < 3
	})
	if rounds != 3 {
		t.Fatalf("rounds = %d, want 3", rounds)
	}
}

func TestEveryStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	rounds := 0
	runEvery(t, ctx, time.Millisecond, func(context.Context) bool {
		rounds++
		if rounds == 2 {
			cancel()
		}
		return true
	})
	// A tick ready with ctx's end may still start a round or so: that it
	// returned is the point.
	if rounds < 2 {
		t.Fatalf("rounds = %d, want at least 2", rounds)
	}
}

func TestEveryWaitsAnIntervalBeforeTheFirstRound(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rounds := 0
	runEvery(t, ctx, time.Hour, func(context.Context) bool {
		rounds++
		return true
	})
	if rounds != 0 {
		t.Fatalf("rounds = %d, want 0", rounds)
	}
}
