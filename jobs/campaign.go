package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/campaignrelease"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/queue"
)

// CampaignTicker runs a campaign's release for one run of its job: ticks
// until the budget is spent (the campaignrelease service).
type CampaignTicker interface {
	Run(ctx context.Context, t db.Tenant, id, gen int64, budget time.Duration) (campaignrelease.Outcome, error)
}

// CampaignRetry is the delay before a failed tick runs again: a tick fails
// only when the database or the network does, and the campaign's pacing
// wants it back soon after they are.
const CampaignRetry = 2 * time.Second

// CampaignWorker works queue.CampaignArgs jobs: each run is the ticks
// that fit in half its timeout, waited for in the worker, then a snooze
// until the next (River's JobSnooze, which costs no attempt); a campaign no
// longer running, or released by a newer job (a resume raised its release
// generation), ends the job. The tick's transactions write the tenant's
// schema alone; River completes the job after the run.
type CampaignWorker struct {
	river.WorkerDefaults[queue.CampaignArgs]
	Ticker CampaignTicker
	// RunTimeout bounds one run (queue.Config.ReleaseTimeout); its ticks
	// end within half of it. 0: River's default timeout and one tick a
	// run.
	RunTimeout time.Duration
}

// Timeout is one run's bound.
func (w *CampaignWorker) Timeout(*river.Job[queue.CampaignArgs]) time.Duration { return w.RunTimeout }

// NextRetry retries a failed tick after CampaignRetry, whatever its
// attempt.
func (w *CampaignWorker) NextRetry(*river.Job[queue.CampaignArgs]) time.Time {
	return time.Now().Add(CampaignRetry)
}

// Work runs the ticks of one run of the job's campaign.
func (w *CampaignWorker) Work(ctx context.Context, job *river.Job[queue.CampaignArgs]) error {
	t, err := job.Args.Tenant()
	if err != nil {
		return river.JobCancel(fmt.Errorf("campaign job %d: %w", job.ID, err))
	}
	out, err := w.Ticker.Run(ctx, t, job.Args.CampaignID, job.Args.Gen, w.RunTimeout/2)
	if err != nil {
		return queue.Explain(fmt.Errorf("campaign %d in %s: %w", job.Args.CampaignID, t.Schema, err))
	}
	if out.Done {
		return nil
	}
	return river.JobSnooze(out.Next)
}
