package joboutbox

import (
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/bizmsg/platform/platform/queue"
)

// A job's row carries its options as River merges them (the insert's over
// the arguments' own), and the options the outbox cannot carry are
// refused rather than dropped.
func TestRowsCarryRiverOptions(t *testing.T) {
	t.Parallel()
	ref := queue.TenantRef{OrgID: 7, Schema: "tenant_7"}
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	campaign := queue.CampaignArgs{TenantRef: ref, CampaignID: 3}
	for _, tc := range []struct {
		name     string
		p        river.InsertManyParams
		queue    string
		priority int16
		attempts int16
		at       *time.Time
		unique   string
		refused  bool
	}{
		{name: "delivery", p: queue.DeliveryJob(queue.DeliverArgs{TenantRef: ref, MessageID: 1}),
			queue: queue.QueueDelivery, attempts: queue.DefaultDeliveryMaxAttempts},
		{name: "campaign message's delivery", p: func() river.InsertManyParams {
			p := queue.DeliveryJob(queue.DeliverArgs{TenantRef: ref, MessageID: 1})
			p.InsertOpts.Priority = queue.PriorityCampaign
			return p
		}(), queue: queue.QueueDelivery, priority: queue.PriorityCampaign, attempts: queue.DefaultDeliveryMaxAttempts},
		{name: "release", p: queue.ReleaseJob(queue.ReleaseArgs{TenantRef: ref, MessageID: 1}, at),
			queue: queue.QueueRelease, attempts: queue.DefaultReleaseMaxAttempts, at: &at},
		{name: "campaign, options from InsertTx", p: river.InsertManyParams{Args: campaign, InsertOpts: queue.CampaignJob(campaign, at)},
			queue: queue.QueueRelease, attempts: queue.DefaultCampaignMaxAttempts, at: &at,
			unique: "{available,pending,running,retryable,scheduled}"},
		{name: "campaign, its own options", p: river.InsertManyParams{Args: campaign},
			queue: queue.QueueRelease, attempts: queue.DefaultCampaignMaxAttempts,
			unique: "{available,pending,running,retryable,scheduled}"},
		{name: "webhook", p: queue.WebhookDeliveryJob(queue.WebhookDeliveryArgs{TenantRef: ref, DeliveryID: 1, EndpointID: 2}),
			queue: queue.QueueWebhooks, attempts: queue.DefaultWebhookMaxAttempts,
			unique: "{available,pending,running,retryable,scheduled}"},
		{name: "tags", p: river.InsertManyParams{Args: campaign, InsertOpts: &river.InsertOpts{Tags: []string{"x"}}}, refused: true},
		{name: "unique by period", p: river.InsertManyParams{Args: campaign,
			InsertOpts: &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByPeriod: time.Hour}}}, refused: true},
		{name: "unique by state alone", p: river.InsertManyParams{Args: campaign,
			InsertOpts: &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByState: []rivertype.JobState{rivertype.JobStateAvailable}}}}, refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var r outboxRows
			err := r.add(tc.p)
			if tc.refused {
				if err == nil {
					t.Fatalf("accepted, want refused")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.kinds[0] != tc.p.Args.Kind() || r.queues[0] != tc.queue || r.priorities[0] != tc.priority || r.attempts[0] != tc.attempts {
				t.Fatalf("row %s %s %d %d, want %s %s %d %d", r.kinds[0], r.queues[0], r.priorities[0], r.attempts[0],
					tc.p.Args.Kind(), tc.queue, tc.priority, tc.attempts)
			}
			if (r.scheduled[0] == nil) != (tc.at == nil) || tc.at != nil && !r.scheduled[0].Equal(*tc.at) {
				t.Fatalf("scheduled %v, want %v", r.scheduled[0], tc.at)
			}
			got := ""
			if r.unique[0] != nil {
				got = *r.unique[0]
			}
			if got != tc.unique {
				t.Fatalf("unique states %q, want %q", got, tc.unique)
			}
		})
	}
}
