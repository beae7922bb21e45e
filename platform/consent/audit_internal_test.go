package consent

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/audit"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/queue"
)

// An opt-out's audit entry applied from the job outbox is written once
// however often its row is applied (a move that dies between its commits
// applies it again), as the member's; a row in another organization's
// outbox is refused.
func TestApplyAuditOnce(t *testing.T) {
	t.Parallel()
	d, _ := dbtest.Migrated(t)
	ctx := context.Background()
	var org, user int64
	if err := d.Pool.QueryRow(ctx, `INSERT INTO central.organizations (name) VALUES ('org') RETURNING id`).Scan(&org); err != nil {
		t.Fatal(err)
	}
	if err := d.Pool.QueryRow(ctx, `INSERT INTO central.users (email, password_hash, name) VALUES ('a@example.com', 'x', 'Ann')
		RETURNING id`).Scan(&user); err != nil {
		t.Fatal(err)
	}
	tn := db.Tenant{OrgID: org, Schema: db.SchemaFor(org)}
	args, err := json.Marshal(auditArgs{TenantRef: queue.RefOf(tn), Key: "opt_out:k1", UserID: user, KeyID: 7,
		Action: audit.ActionOptOutAdd, EntryID: 3, Details: map[string]any{"phone": "+14155550100"}, At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error { return ApplyAudit(ctx, tx, tn, args) }); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	var actor string
	if err := d.Pool.QueryRow(ctx, `SELECT count(*), min(actor_type || ':' || actor_user_id || ':' || actor_name || ' ' || target)
		FROM central.audit_log WHERE organization_id = $1 AND action = $2`, org, audit.ActionOptOutAdd).Scan(&n, &actor); err != nil {
		t.Fatal(err)
	}
	if want := "user:" + strconv.FormatInt(user, 10) + ":Ann opt_out:3"; n != 1 || actor != want {
		t.Fatalf("%d entries, %q; want one, %q", n, actor, want)
	}
	other := db.Tenant{OrgID: org + 1, Schema: db.SchemaFor(org + 1)}
	if err := pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error { return ApplyAudit(ctx, tx, other, args) }); err == nil {
		t.Fatal("an entry of another organization's outbox was applied")
	}
}
