package delivery

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/jackc/pgx/v5"
)

// Delivery's statements find their messages by id, whatever the statistics
// say: after an ANALYZE that saw only sent messages, then a backlog of
// queued ones, neither a generic plan nor a custom one starts from the
// status index (which would read every queued message for each batch). The
// claims look for each message's blocker (an earlier queued message of its
// conversation) in the partial index of queued messages by conversation,
// never in the status index either.
func TestDeliveryPlansStartFromIDs(t *testing.T) {
	t.Parallel()
	f := newPlanFixture(t)
	ctx := context.Background()
	msgs := f.tn.Table("messages")
	insert := func(status string, n int) {
		t.Helper()
		if _, err := f.d.Pool.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (sender_number_id, to_phone, type, content, status, message_id)
			SELECT $1, '+14155550002', 'text', 'x', $2, CASE WHEN $2 = 'sent' THEN g END
			  FROM generate_series(1, $3::int) g`, msgs), f.sid, status, n); err != nil {
			t.Fatal(err)
		}
	}
	insert("sent", 5000)
	if _, err := f.d.Pool.Exec(ctx, "ANALYZE "+msgs); err != nil {
		t.Fatal(err)
	}
	insert("queued", 5000)

	ids := "'{5001,5002,5003,5004,5005,5006,5007,5008}'"
	ones := "'{1,1,1,1,1,1,1,1}'"
	statements := []struct {
		name, sql, args string
	}{
		{"claim one", claimOneSQL(f.tn), "1000, 5001, now(), now() - interval '10 minutes', 1, 10"},
		{"claim many", claimManySQL(f.tn), fmt.Sprintf("1000, %s, now(), now() - interval '10 minutes', %s, 10", ids, ones)},
		{"mark one sent", markOneSentSQL(f.tn, false), "1, 1, 1, now(), false, now(), 5001"},
		{"mark one sent with rows", markOneSentSQL(f.tn, true), "1, 1, 1, now(), true, now(), 5001"},
		{"mark sent", markSentSQL(f.tn, false), fmt.Sprintf("%s, %s, %s, %s, array_fill(now(), '{8}'), array_fill(false, '{8}'), now()", ids, ones, ones, ones)},
		{"mark sent with rows", markSentSQL(f.tn, true), fmt.Sprintf("%s, %s, %s, %s, array_fill(now(), '{8}'), array_fill(true, '{8}'), now()", ids, ones, ones, ones)},
	}
	for _, st := range statements {
		for _, mode := range []string{"force_generic_plan", "force_custom_plan"} {
			t.Run(st.name+"/"+mode, func(t *testing.T) {
				t.Parallel()
				conn, err := f.d.Pool.Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Release()
				if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
					t.Fatal(err)
				}
				if _, err := conn.Exec(ctx, "PREPARE plan_check AS "+st.sql); err != nil {
					t.Fatal(err)
				}
				defer conn.Exec(ctx, "DEALLOCATE plan_check") //nolint:errcheck // the connection goes back to a test pool
				rows, err := conn.Query(ctx, "EXPLAIN (COSTS OFF) EXECUTE plan_check("+st.args+")")
				if err != nil {
					t.Fatal(err)
				}
				plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					t.Fatal(err)
				}
				text := strings.Join(plan, "\n")
				if strings.Contains(text, "messages_status_idx") || !strings.Contains(text, "messages_pkey") {
					t.Fatalf("the plan does not find the messages by id:\n%s", text)
				}
				if strings.HasPrefix(st.name, "claim") && !strings.Contains(text, "messages_queued_conversation_idx") {
					t.Fatalf("the plan does not find the blockers in their index:\n%s", text)
				}
			})
		}
	}
}

// planFixture is a database of its own with one tenant and one active
// sender.
type planFixture struct {
	d   *db.DB
	tn  db.Tenant
	sid int64
}

func newPlanFixture(t *testing.T) *planFixture {
	t.Helper()
	d, _ := dbtest.Migrated(t)
	ctx := context.Background()
	var org int64
	if err := d.Pool.QueryRow(ctx, `INSERT INTO central.organizations (name) VALUES ('org') RETURNING id`).Scan(&org); err != nil {
		t.Fatal(err)
	}
	tn, err := db.NewTenant(org, db.SchemaFor(org))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, `UPDATE central.organizations SET schema_name = $2 WHERE id = $1`, org, tn.Schema); err != nil {
		t.Fatal(err)
	}
	mig, err := migrate.New(migrate.Config{Pool: d.Pool, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mig.Tenant(ctx, tn); err != nil {
		t.Fatal(err)
	}
	var sid int64
	if err := d.Pool.QueryRow(ctx, fmt.Sprintf(`INSERT INTO %s (phone, status, verification_status, verified_at, activated_at)
		VALUES ('+14155550001', 'active', 'verified', now(), now()) RETURNING id`, tn.Table("sender_numbers"))).Scan(&sid); err != nil {
		t.Fatal(err)
	}
	return &planFixture{d: d, tn: tn, sid: sid}
}
