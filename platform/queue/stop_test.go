package queue_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/queue"
)

// blockArgs is a job that runs until it is cancelled.
type blockArgs struct{}

func (blockArgs) Kind() string { return "test_block" }

type blockWorker struct {
	river.WorkerDefaults[blockArgs]
	started chan struct{}
	ended   chan error
}

func (w *blockWorker) Timeout(*river.Job[blockArgs]) time.Duration { return time.Hour }

func (w *blockWorker) Work(ctx context.Context, _ *river.Job[blockArgs]) error {
	close(w.started)
	<-ctx.Done()
	w.ended <- ctx.Err()
	return ctx.Err()
}

// Stop ends within its context's deadline even when a running job would
// run on: the job may finish for half the time, then it is cancelled, and
// Stop says so without calling it an error.
func TestStopWithinItsDeadline(t *testing.T) {
	t.Parallel()
	d, _ := dbtest.Migrated(t)
	w := &blockWorker{started: make(chan struct{}), ended: make(chan error, 1)}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	c, err := queue.NewClient(queue.Config{Pool: d.Pool, Workers: workers,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), FetchPollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Insert(context.Background(), blockArgs{}, &river.InsertOpts{Queue: river.QueueDefault}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.started:
	case <-time.After(20 * time.Second):
		t.Fatal("the job did not start")
	}
	const bound = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	start := time.Now()
	cancelled, err := queue.Stop(ctx, c)
	took := time.Since(start)
	if err != nil || !cancelled {
		t.Fatalf("Stop = %v, %v; want the job cancelled and no error", cancelled, err)
	}
	if took < bound/2-100*time.Millisecond || took >= bound {
		t.Fatalf("Stop took %s, want about half of %s and less than all of it", took, bound)
	}
	select {
	case err := <-w.ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the job ended with %v, want cancelled", err)
		}
	default:
		t.Fatal("the job was still running after Stop")
	}
}
