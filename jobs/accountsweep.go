package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/riverqueue/river"
)

// DefaultAccountSweepInterval is how often the account-verification sweep
// runs when no interval is configured: a pending_account_verification number
// becomes active at most this long (plus the sweep's own run) after its
// owner's network account is verified.
const DefaultAccountSweepInterval = 30 * time.Second

// AccountSweeper activates every pending_account_verification sender number
// whose owner is now verified, returning how many it activated. An error
// reports numbers it could not check; the others are still processed.
type AccountSweeper interface {
	ActivateVerifiedOwners(ctx context.Context) (int, error)
}

// AccountSweepWorker runs the sweep.
type AccountSweepWorker struct {
	river.WorkerDefaults[queue.AccountSweepArgs]
	Sweeper AccountSweeper
	Logger  *slog.Logger
}

// Work runs one sweep. A failing sweep is not retried: the next period runs a
// fresh one.
func (w *AccountSweepWorker) Work(ctx context.Context, job *river.Job[queue.AccountSweepArgs]) error {
	n, err := w.Sweeper.ActivateVerifiedOwners(ctx)
	if n > 0 {
		w.Logger.Info("sender numbers activated after owner verification", "count", n)
	}
	if err != nil {
		return river.JobCancel(err)
	}
	return nil
}

// AccountSweepPeriodic schedules the sweep every interval (and at start);
// interval ≤ 0 means DefaultAccountSweepInterval.
func AccountSweepPeriodic(interval time.Duration) *river.PeriodicJob {
	defaults.Positive(&interval, DefaultAccountSweepInterval)
	return periodic(interval, queue.AccountSweepArgs{}, 1)
}
