package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/bizmsg/platform/platform/queue"
	"github.com/riverqueue/river"
)

// Purger deletes data that has outlived its use (expired refresh tokens,
// idempotency records older than 24 hours, ...) and reports how many rows went.
type Purger interface {
	Purge(ctx context.Context, now time.Time) (int64, error)
}

// PurgerFunc adapts a function to Purger.
type PurgerFunc func(ctx context.Context, now time.Time) (int64, error)

// Purge calls f.
func (f PurgerFunc) Purge(ctx context.Context, now time.Time) (int64, error) { return f(ctx, now) }

// HousekeepingWorker runs every registered Purger.
type HousekeepingWorker struct {
	river.WorkerDefaults[queue.HousekeepingArgs]
	Purgers map[string]Purger
	Now     func() time.Time
	Logger  *slog.Logger
}

// Work runs each purger; a failing purger fails the job (River retries it) after
// the others have run.
func (w *HousekeepingWorker) Work(ctx context.Context, job *river.Job[queue.HousekeepingArgs]) error {
	var firstErr error
	for name, p := range w.Purgers {
		n, err := p.Purge(ctx, w.Now())
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("purge %s: %w", name, err)
			}
			continue
		}
		if n > 0 {
			w.Logger.Info("housekeeping purged rows", "what", name, "rows", n)
		}
	}
	return firstErr
}

// HousekeepingPeriodic schedules housekeeping every interval (and at start).
func HousekeepingPeriodic(interval time.Duration) *river.PeriodicJob {
	return periodic(interval, queue.HousekeepingArgs{}, 0)
}
