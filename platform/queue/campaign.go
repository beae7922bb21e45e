package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// PriorityCampaign is the River priority of a campaign message's delivery
// job: River fetches jobs by priority first, and API sends have the
// default (1), so a sender's API sends are delivered ahead of its waiting
// campaign messages (docs/design.md, §Campaigns: pacing and fairness).
const PriorityCampaign = 3

// DefaultCampaignMaxAttempts bounds the failed ticks of a campaign's
// release job (a snooze is not an attempt). A tick fails only on a
// database error; the release retries it within seconds
// (jobs.CampaignWorker.NextRetry), so this covers about an hour of
// outage, past which a wake (resume) or an operator inserts it again.
const DefaultCampaignMaxAttempts = 1000

// CampaignArgs is the release job of one campaign (docs/design.md,
// §Campaigns: pacing and fairness): each run ticks, releasing the
// recipients the pacing allows, then snoozes. It is written (through the
// job outbox) in the transaction of the campaign's start or resume,
// scheduled at its send_at, with the campaign's new release generation;
// it is unique per campaign and generation while not finalized, so at
// most one runs per generation, and one of an older generation ends at
// its next tick.
type CampaignArgs struct {
	TenantRef
	// CampaignID is the campaign's id in the tenant schema.
	CampaignID int64 `json:"campaign_id"`
	// Gen is the campaign's release generation the job was queued with
	// (campaigns.Campaign.ReleaseGen; 0 for jobs queued before it existed).
	Gen int64 `json:"gen,omitempty"`
}

// Kind names the job in River.
func (CampaignArgs) Kind() string { return "campaign_release" }

// InsertOpts puts campaign ticks on the release queue, one job per
// campaign and generation in any state before its end (completed,
// cancelled, discarded).
func (CampaignArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       QueueRelease,
		MaxAttempts: DefaultCampaignMaxAttempts,
		UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
			rivertype.JobStateRetryable, rivertype.JobStateScheduled,
		}},
	}
}

// CampaignJob returns args's insert options, scheduled at at (a zero at:
// now).
func CampaignJob(args CampaignArgs, at time.Time) *river.InsertOpts {
	opts := args.InsertOpts()
	opts.ScheduledAt = at
	return &opts
}

// CampaignJobOf returns campaign id's newest release job of organization
// orgID, nil when River keeps none.
func CampaignJobOf(ctx context.Context, c Client, orgID, id int64) (*rivertype.JobRow, error) {
	res, err := c.JobList(ctx, river.NewJobListParams().
		Kinds(CampaignArgs{}.Kind()).
		Where(`(args ->> 'org_id')::bigint = @org::bigint AND (args ->> 'campaign_id')::bigint = @campaign::bigint`,
			river.NamedArgs{"org": orgID, "campaign": id}).
		OrderBy(river.JobListOrderByID, river.SortOrderDesc).
		First(1))
	if err != nil {
		return nil, fmt.Errorf("find release job of campaign %d: %w", id, err)
	}
	if len(res.Jobs) == 0 {
		return nil, nil
	}
	return res.Jobs[0], nil
}
