package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/keys"
	"github.com/bizmsg/platform/platform/queue"
)

// KeyExpiryInterval is how often keys about to expire are looked for: a key
// is reported at most this long after it comes within keys.ExpiryNotice of
// its expiry.
const KeyExpiryInterval = 15 * time.Minute

// KeyExpiryWorker reports keys about to expire (keys.Service.NotifyExpiring).
type KeyExpiryWorker struct {
	river.WorkerDefaults[queue.KeyExpiryArgs]
	Keys   *keys.Service
	Now    func() time.Time
	Logger *slog.Logger
}

// Work runs one pass. A failing pass is not retried: the next period runs a
// fresh one, and keys already reported are not reported again.
func (w *KeyExpiryWorker) Work(ctx context.Context, _ *river.Job[queue.KeyExpiryArgs]) error {
	n, err := w.Keys.NotifyExpiring(ctx, w.Now())
	if n > 0 {
		w.Logger.Info("api keys reported as expiring", "count", n)
	}
	if err != nil {
		return river.JobCancel(err)
	}
	return nil
}

// KeyExpiryPeriodic schedules the pass every KeyExpiryInterval (and at start).
func KeyExpiryPeriodic() *river.PeriodicJob {
	return periodic(KeyExpiryInterval, queue.KeyExpiryArgs{}, 1)
}
