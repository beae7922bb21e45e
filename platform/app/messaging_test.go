package app

import (
	"context"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/batch"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/metrics"
	"github.com/bizmsg/platform/platform/yield"
)

// Every foreground batcher counts its runs on the yield gate: a run held
// in flight for a whole sample closes it, and webhooks give way.
func TestForegroundBatchesCountOnTheGate(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Now())
	gate, err := yield.New(yield.Config{Interval: time.Millisecond, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	a := &App{yield: gate, Metrics: metrics.New()}
	for _, kind := range []string{"accept", "deliver", "auth", "lookup", "network"} {
		started, release := make(chan struct{}), make(chan struct{})
		b := batch.New(func(_ context.Context, _ string, items []int) ([]int, error) {
			close(started)
			<-release
			return items, nil
		}, a.batches(kind))
		done := make(chan error, 1)
		go func() { _, err := b.Do(context.Background(), "tenant", 1); done <- err }()
		<-started
		clk.Advance(time.Second)
		if !gate.Closed() {
			t.Errorf("a %s run in flight for a whole sample left the gate open", kind)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		if gate.Closed() {
			t.Errorf("the gate stayed closed a sample after the %s run ended", kind)
		}
	}
}
