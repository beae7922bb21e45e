package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/bizmsg/platform/platform/campaignrelease"
	"github.com/bizmsg/platform/platform/queue"
)

// runAdminCampaign runs `platform admin campaign explain`.
func runAdminCampaign(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	it, err := openOrgItem(ctx, args, "campaign", "explain", "campaign",
		"print the explanation and the release job as one JSON object", stderr)
	if err != nil {
		return err
	}
	defer it.App.Close()
	a, t := it.App, it.Tenant
	x, err := a.CampaignRelease.Explain(ctx, t, it.ID)
	if err != nil {
		return fmt.Errorf("admin campaign explain: %w", cliError(err))
	}
	job, err := queue.CampaignJobOf(ctx, a.River, it.Org, it.ID)
	if err != nil {
		return err
	}
	if it.JSON {
		return writeJSON(stdout, struct {
			campaignrelease.Explanation
			Job *rivertype.JobRow `json:"job"`
		}{x, job})
	}
	printCampaign(stdout, x, job)
	return nil
}

// printCampaign writes a campaign's explanation and its release job for
// an operator.
func printCampaign(w io.Writer, x campaignrelease.Explanation, job *rivertype.JobRow) {
	c := x.Campaign
	fmt.Fprintf(w, "campaign %d %q: %s, reserve %d%%\n", c.ID, c.Name, c.Status, c.ReservePercent)
	fmt.Fprintf(w, "  counts   total %d, pending %d, queued %d, sent %d, delivered %d, read %d, failed %d, skipped %d\n",
		c.Counts.Total, c.Counts.Pending, c.Counts.Queued, c.Counts.Sent, c.Counts.Delivered, c.Counts.Read,
		c.Counts.Failed, c.Counts.Skipped)
	fmt.Fprintf(w, "  waiting  %s\n", x.Waiting)
	fmt.Fprintf(w, "pool (room %d this tick):\n", x.Room)
	fmt.Fprintf(w, "  %-8s %-22s %6s %7s %7s %6s %9s %9s %5s  %s\n", "sender", "status", "rate", "limit", "reserve", "used", "allowance",
		"in flight", "room", "why 0")
	for _, s := range x.Senders {
		fmt.Fprintf(w, "  %-8d %-22s %6.1f %7d %7d %6d %9d %9d %5d  %s\n", s.ID, s.Status, s.Rate, s.Limit, s.Reserve, s.Used,
			s.Allowance, s.InFlight, s.Room, s.Why)
	}
	if job == nil {
		fmt.Fprintln(w, "release job: none kept (River deletes completed jobs after a day)")
		return
	}
	fmt.Fprintf(w, "release job %d (state %s): next tick at %s, failed ticks %d of %d\n", job.ID, job.State,
		job.ScheduledAt.UTC().Format(time.RFC3339Nano), job.Attempt, job.MaxAttempts)
	for _, e := range job.Errors {
		fmt.Fprintf(w, "  error, attempt %d at %s: %s\n", e.Attempt, e.At.UTC().Format(time.RFC3339), e.Error)
	}
}
