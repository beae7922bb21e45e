package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/queue"
)

// WebhookOutboxInterval is how often every organization's webhook outbox
// and job outbox are looked at for rows that no process is expanding or
// moving: the events and jobs recorded by a process that ended between
// their commit and their expansion or move go on at most about this much
// later.
const WebhookOutboxInterval = time.Minute

// WebhookOutboxWorker wakes this process's expansion of every organization
// whose webhook outbox holds rows (webhooks.Service.SweepOutbox, over every
// tenant), and its move of every job outbox that does
// (joboutbox.Outbox.Sweep), and reports how many outboxes it woke.
type WebhookOutboxWorker struct {
	river.WorkerDefaults[queue.WebhookOutboxArgs]
	Sweep  func(ctx context.Context) (int64, error)
	Logger *slog.Logger
}

// Work runs one sweep. A failing sweep is not retried: the next period runs
// a fresh one.
func (w *WebhookOutboxWorker) Work(ctx context.Context, _ *river.Job[queue.WebhookOutboxArgs]) error {
	n, err := w.Sweep(ctx)
	if n > 0 {
		w.Logger.Info("outboxes found waiting", "outboxes", n)
	}
	if err != nil {
		return river.JobCancel(err)
	}
	return nil
}

// WebhookOutboxPeriodic schedules the sweep every interval (and at start).
func WebhookOutboxPeriodic(interval time.Duration) *river.PeriodicJob {
	return periodic(interval, queue.WebhookOutboxArgs{}, 1)
}
