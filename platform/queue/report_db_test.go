package queue

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/dbtest"
)

// DeliveryJobOf finds a message's delivery job among other organizations'
// and other kinds' jobs, and the planner serves its filter from the partial
// index river_job_message_delivery_idx (migrations/river/0002): the
// expressions of deliveryJobWhere and of the index must stay the same, or
// the lookup under GET /api/v1/messages/{id} reads the whole job table.
func TestDeliveryJobWhereUsesItsIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := dbtest.Migrated(t)
	rc, err := NewClient(Config{Pool: d.Pool, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var params []river.InsertManyParams
	for msg := int64(1); msg <= 500; msg++ {
		for _, org := range []int64{7, 8} {
			params = append(params,
				DeliveryJob(DeliverArgs{TenantRef: TenantRef{OrgID: org, Schema: "tenant_x"}, MessageID: msg, SenderID: 3}),
				// A webhook job names ids of the same size, but under
				// other keys: it is not a delivery job.
				WebhookDeliveryJob(WebhookDeliveryArgs{TenantRef: TenantRef{OrgID: org, Schema: "tenant_x"}, DeliveryID: msg, EndpointID: msg}))
		}
	}
	if _, err := rc.InsertMany(ctx, params); err != nil {
		t.Fatal(err)
	}

	job, err := DeliveryJobOf(ctx, rc, 8, 42)
	if err != nil {
		t.Fatal(err)
	}
	var args DeliverArgs
	if job == nil || json.Unmarshal(job.EncodedArgs, &args) != nil || args.OrgID != 8 || args.MessageID != 42 {
		t.Fatalf("DeliveryJobOf(8, 42) = %+v", job)
	}
	if job, err := DeliveryJobOf(ctx, rc, 9, 42); err != nil || job != nil {
		t.Fatalf("another organization's message: %+v, %v", job, err)
	}

	if _, err := d.Pool.Exec(ctx, "ANALYZE river.river_job"); err != nil {
		t.Fatal(err)
	}
	where := strings.NewReplacer("@org", "$1", "@message", "$2").Replace(deliveryJobWhere)
	rows, err := d.Pool.Query(ctx, `EXPLAIN SELECT * FROM river.river_job
		WHERE kind = any($3::text[]) AND `+where+` ORDER BY id LIMIT 1`,
		int64(8), int64(42), []string{DeliverArgs{}.Kind()})
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	// Both arguments must be conditions of the index scan, not a filter
	// on the rows of one organization.
	all := strings.Join(lines, "\n")
	cond := ""
	for _, l := range lines {
		if strings.Contains(l, "Index Cond:") {
			cond = l
		}
	}
	if !strings.Contains(all, "river_job_message_delivery_idx") ||
		!strings.Contains(cond, "'org_id'") || !strings.Contains(cond, "'message_id'") {
		t.Fatalf("the delivery job lookup does not find the job by its index:\n%s", all)
	}
}
