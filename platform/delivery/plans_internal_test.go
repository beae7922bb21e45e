package delivery

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/bizmsg/platform/platform/sqlq"
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

	q, err := loadQueries()
	if err != nil {
		t.Fatal(err)
	}
	ids := "'{5001,5002,5003,5004,5005,5006,5007,5008}'"
	ones := "'{1,1,1,1,1,1,1,1}'"
	claim := sqlq.Args{"default_limit": "1000", "now": "now()", "since": "now() - interval '10 minutes'", "lease": "10"}
	markMany := func(delivered string) sqlq.Args {
		return sqlq.Args{"ids": ids, "message_ids": ones, "conversation_ids": ones, "recipient_ids": ones,
			"sent_ats": "array_fill(now(), '{8}')", "delivered": "array_fill(" + delivered + ", '{8}')", "now": "now()"}
	}
	markOne := func(delivered string) sqlq.Args {
		return sqlq.Args{"message_id": "1", "conversation_id": "1", "recipient_id": "1", "sent_at": "now()",
			"delivered": delivered, "now": "now()", "id": "5001"}
	}
	statements := []struct {
		name, query string
		args        sqlq.Args
	}{
		{"claim one", "claim_one", with(claim, sqlq.Args{"id": "5001", "job": "1"})},
		{"claim many", "claim_many", with(claim, sqlq.Args{"ids": ids, "jobs": ones})},
		{"mark one sent", "mark_one_sent", markOne("false")},
		{"mark one sent with rows", "mark_one_sent_rows", markOne("true")},
		{"mark sent", "mark_sent", markMany("false")},
		{"mark sent with rows", "mark_sent_rows", markMany("true")},
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
				// The arguments are SQL expressions, in the parameters' order.
				text, vals, err := q.Pgx(st.query, f.tn.Quoted(), st.args)
				if err != nil {
					t.Fatal(err)
				}
				args := make([]string, len(vals))
				for i, v := range vals {
					args[i] = v.(string)
				}
				if _, err := conn.Exec(ctx, "PREPARE plan_check AS "+text); err != nil {
					t.Fatal(err)
				}
				defer conn.Exec(ctx, "DEALLOCATE plan_check") //nolint:errcheck // the connection goes back to a test pool
				rows, err := conn.Query(ctx, "EXPLAIN (COSTS OFF) EXECUTE plan_check("+strings.Join(args, ", ")+")")
				if err != nil {
					t.Fatal(err)
				}
				plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					t.Fatal(err)
				}
				shown := strings.Join(plan, "\n")
				if strings.Contains(shown, "messages_status_idx") || !strings.Contains(shown, "messages_pkey") {
					t.Fatalf("the plan does not find the messages by id:\n%s", shown)
				}
				if strings.HasPrefix(st.name, "claim") && !strings.Contains(shown, "messages_queued_conversation_idx") {
					t.Fatalf("the plan does not find the blockers in their index:\n%s", shown)
				}
			})
		}
	}
}

// with returns the arguments of a and b together.
func with(a, b sqlq.Args) sqlq.Args {
	out := sqlq.Args{}
	maps.Copy(out, a)
	maps.Copy(out, b)
	return out
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
