package migrate_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/migrations"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/migrate"
)

var quiet = slog.New(slog.NewJSONHandler(io.Discard, nil))

func TestLoadSet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		files   fstest.MapFS
		want    []int
		wantErr bool
	}{
		{"ordered by number", fstest.MapFS{"0010_b.sql": {Data: []byte("x")}, "0002_a.sql": {Data: []byte("y")}}, []int{2, 10}, false},
		{"non-sql ignored", fstest.MapFS{"0001_a.sql": {Data: []byte("x")}, "README": {Data: []byte("z")}}, []int{1}, false},
		{"bad name", fstest.MapFS{"init.sql": {Data: []byte("x")}}, nil, true},
		{"zero version", fstest.MapFS{"0000_a.sql": {Data: []byte("x")}}, nil, true},
		{"duplicate version", fstest.MapFS{"0001_a.sql": {Data: []byte("x")}, "1_b.sql": {Data: []byte("y")}}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			set, err := migrate.LoadSet(tt.files)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			var got []int
			for _, m := range set {
				got = append(got, m.Version)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("versions = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("versions = %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestEmbeddedSetsLoad(t *testing.T) {
	t.Parallel()
	for _, f := range []struct {
		name string
		set  func() (migrate.Set, error)
	}{
		{"central", func() (migrate.Set, error) { return migrate.LoadSet(migrations.Central()) }},
		{"network", func() (migrate.Set, error) { return migrate.LoadSet(migrations.Network()) }},
		{"river", func() (migrate.Set, error) { return migrate.LoadSet(migrations.River()) }},
		{"tenant", func() (migrate.Set, error) { return migrate.LoadSet(migrations.Tenant()) }},
	} {
		set, err := f.set()
		if err != nil || len(set) == 0 {
			t.Fatalf("%s: %d migrations, err %v", f.name, len(set), err)
		}
	}
}

// Two migrators started at once on one empty database both succeed and every
// migration is applied exactly once.
func TestConcurrentMigratorsApplyOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := dbtest.NewDatabase(t)
	const n = 2
	var wg sync.WaitGroup
	errs := make([]error, n)
	applied := make([]int, n)
	for i := range n {
		d := dbtest.Open(t, u) // separate pools, as separate processes would have
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := migrate.New(migrate.Config{Pool: d.Pool, Logger: quiet})
			if err != nil {
				errs[i] = err
				return
			}
			applied[i], errs[i] = m.Base(ctx)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("migrator %d: %v", i, err)
		}
	}
	d := dbtest.Open(t, u)
	for _, s := range []struct {
		schema string
		fsys   func() (migrate.Set, error)
	}{
		{"central", func() (migrate.Set, error) { return migrate.LoadSet(migrations.Central()) }},
		{"network", func() (migrate.Set, error) { return migrate.LoadSet(migrations.Network()) }},
		{"river", func() (migrate.Set, error) { return migrate.LoadSet(migrations.River()) }},
	} {
		set, _ := s.fsys()
		var rows, distinct int
		if err := d.Pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT version) FROM "+s.schema+".schema_migrations").Scan(&rows, &distinct); err != nil {
			t.Fatal(err)
		}
		if rows != len(set) || distinct != len(set) {
			t.Fatalf("%s: %d version rows (%d distinct), want %d", s.schema, rows, distinct, len(set))
		}
	}
	// River's own version table, too.
	var riverRows, riverDistinct int
	if err := d.Pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT version) FROM river.river_migration").Scan(&riverRows, &riverDistinct); err != nil {
		t.Fatal(err)
	}
	if riverRows == 0 || riverRows != riverDistinct {
		t.Fatalf("river migrations: %d rows, %d distinct", riverRows, riverDistinct)
	}
	m, err := migrate.New(migrate.Config{Pool: d.Pool, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ok, err := m.Current(ctx)
	if err != nil || !ok {
		t.Fatalf("Current = %v, %v; want true", ok, err)
	}
	if again, err := m.Base(ctx); err != nil || again != 0 {
		t.Fatalf("second Base applied %d, err %v; want 0, nil", again, err)
	}
}

func createOrgs(t *testing.T, d *db.DB, n int) []db.Tenant {
	t.Helper()
	ctx := context.Background()
	var out []db.Tenant
	for range n {
		var id int64
		if err := d.Pool.QueryRow(ctx, "INSERT INTO central.organizations (name) VALUES ('org') RETURNING id").Scan(&id); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Pool.Exec(ctx, "UPDATE central.organizations SET schema_name = $2 WHERE id = $1", id, db.SchemaFor(id)); err != nil {
			t.Fatal(err)
		}
		tn, err := db.NewTenant(id, db.SchemaFor(id))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tn)
	}
	return out
}

// 50 tenant schemas are provisioned, then migrating all of them is a no-op.
func TestProvisionFiftyThenNoop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := dbtest.Migrated(t)
	m, err := migrate.New(migrate.Config{Pool: d.Pool, Concurrency: 4, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	tenants := createOrgs(t, d, 50)
	for _, tn := range tenants {
		n, err := m.Tenant(ctx, tn)
		if err != nil {
			t.Fatalf("provision %s: %v", tn.Schema, err)
		}
		if n != len(m.TenantSet()) {
			t.Fatalf("provision %s applied %d migrations, want %d", tn.Schema, n, len(m.TenantSet()))
		}
	}
	var calls int
	sum, err := m.AllTenants(ctx, func(done, total int) { calls++ })
	if err != nil {
		t.Fatal(err)
	}
	if sum.Total != 50 || sum.Current != 50 || sum.Updated != 0 || len(sum.Failed) != 0 || sum.Err() != nil {
		t.Fatalf("summary = %+v", sum)
	}
	if calls != 50 {
		t.Fatalf("progress called %d times, want 50", calls)
	}
	// Each tenant's tables exist in its own schema.
	var tables int
	if err := d.Pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema LIKE 'tenant\_%' AND table_name = 'messages'`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 50 {
		t.Fatalf("messages tables = %d, want 50", tables)
	}
}

// A tenant that cannot be migrated is reported and does not stop the others.
func TestAllTenantsReportsFailureAndContinues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := dbtest.Migrated(t)
	m, err := migrate.New(migrate.Config{Pool: d.Pool, Concurrency: 2, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	tenants := createOrgs(t, d, 5)
	// Break one tenant: a table in the way of its first migration.
	broken := tenants[2]
	if _, err := d.Pool.Exec(ctx, "CREATE SCHEMA "+broken.Schema+"; CREATE TABLE "+broken.Table("sender_numbers")+" (x int)"); err != nil {
		t.Fatal(err)
	}
	sum, err := m.AllTenants(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Updated != 4 || len(sum.Failed) != 1 || sum.Failed[0].Schema != broken.Schema || sum.Err() == nil {
		t.Fatalf("summary = %+v", sum)
	}
	// The broken tenant's failed transaction left no version rows behind.
	var versions int
	if err := d.Pool.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'schema_migrations'", broken.Schema).Scan(&versions); err != nil {
		t.Fatal(err)
	}
	if versions != 0 {
		t.Fatalf("broken tenant has a version table after a failed migration")
	}
}

// unmigratedTenant returns a database, the tenant migrations, and an
// organization whose schema has none of them applied yet: for tests of
// one migration on the data of the ones before it.
func unmigratedTenant(t *testing.T) (*db.DB, migrate.Set, db.Tenant) {
	t.Helper()
	d, _ := dbtest.Migrated(t)
	set, err := migrate.LoadSet(migrations.Tenant())
	if err != nil {
		t.Fatal(err)
	}
	return d, set, createOrgs(t, d, 1)[0]
}

// applyTo applies, in tx, the migrations of set whose version keep
// accepts to tn's schema (created if missing), in order.
func applyTo(ctx context.Context, t *testing.T, tx pgx.Tx, set migrate.Set, tn db.Tenant, keep func(v int) bool) {
	t.Helper()
	if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+tn.Quoted()+"; SET LOCAL search_path TO "+tn.Quoted()); err != nil {
		t.Fatal(err)
	}
	for _, mig := range set {
		if keep(mig.Version) {
			if _, err := tx.Exec(ctx, mig.SQL); err != nil {
				t.Fatalf("apply %04d: %v", mig.Version, err)
			}
		}
	}
}

// 0004_usage_sides splits each daily_usage row of a tenant migrated before
// it into an acceptance row (used) and, when the day had any delivery, a
// delivery row (dispatched, sent, delivered, failed), keeping every count.
func TestUsageSidesMigrationKeepsCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, set, tn := unmigratedTenant(t)
	type counts struct{ used, dispatched, sent, delivered, failed int }
	before := map[string]counts{
		"2026-11-20": {used: 5, dispatched: 4, sent: 1, delivered: 2, failed: 1},
		"2026-11-21": {used: 3},
	}
	err := pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		applyTo(ctx, t, tx, set, tn, func(v int) bool { return v <= 3 })
		if _, err := tx.Exec(ctx, `INSERT INTO sender_numbers (phone) VALUES ('+12125550100')`); err != nil {
			return err
		}
		for day, c := range before {
			if _, err := tx.Exec(ctx, `INSERT INTO daily_usage (sender_number_id, day, used, dispatched, sent, delivered, failed)
				SELECT id, $1::date, $2, $3, $4, $5, $6 FROM sender_numbers`,
				day, c.used, c.dispatched, c.sent, c.delivered, c.failed); err != nil {
				return err
			}
		}
		applyTo(ctx, t, tx, set, tn, func(v int) bool { return v == 4 })
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := d.Pool.Query(ctx, `SELECT day::text, side, used, dispatched, sent, delivered, failed
		FROM `+tn.Table("daily_usage")+` ORDER BY day, side`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		day, side string
		c         counts
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.day, &x.side, &x.c.used, &x.c.dispatched, &x.c.sent, &x.c.delivered, &x.c.failed)
		return x, err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []row{
		{"2026-11-20", "accept", counts{used: 5}},
		{"2026-11-20", "deliver", counts{dispatched: 4, sent: 1, delivered: 2, failed: 1}},
		{"2026-11-21", "accept", counts{used: 3}},
	}
	if len(got) != len(want) {
		t.Fatalf("rows %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// Migration 9 folds each webhook event into its deliveries: every delivery
// keeps its event's webhook-id, type and body, an event sent to two
// endpoints included, and webhook_events goes.
func TestWebhookDeliveryRowsMigrationKeepsEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, set, tn := unmigratedTenant(t)
	err := pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		applyTo(ctx, t, tx, set, tn, func(v int) bool { return v <= 8 })
		if _, err := tx.Exec(ctx, `INSERT INTO webhook_endpoints (url, events, secret) VALUES ('https://a.example/', '{message.sent}', 's'), ('https://b.example/', '{message.sent}', 's');
					INSERT INTO webhook_events (public_id, type, key, body) VALUES
					  ('msg_1', 'message.sent', 'message:1', '{"n":1}'), ('msg_2', 'message.read', 'message:1', '{"n":2}');
					INSERT INTO webhook_deliveries (endpoint_id, event_id, key, state)
					SELECT e.id, ev.id, ev.key, CASE WHEN e.url = 'https://a.example/' THEN 'succeeded' ELSE 'pending' END
					  FROM webhook_events ev JOIN webhook_endpoints e ON ev.public_id = 'msg_1' OR e.url = 'https://a.example/'
					 ORDER BY ev.id, e.id`); err != nil {
			return fmt.Errorf("rows before 0009: %w", err)
		}
		applyTo(ctx, t, tx, set, tn, func(v int) bool { return v >= 9 })
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := d.Pool.Query(ctx, `SELECT e.url || ' ' || d.event_id || ' ' || d.event_type || ' ' || d.key || ' ' || d.body || ' ' || d.state
		FROM `+tn.Table("webhook_deliveries")+` d JOIN `+tn.Table("webhook_endpoints")+` e ON e.id = d.endpoint_id ORDER BY d.id`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`https://a.example/ msg_1 message.sent message:1 {"n":1} succeeded`,
		`https://b.example/ msg_1 message.sent message:1 {"n":1} pending`,
		`https://a.example/ msg_2 message.read message:1 {"n":2} succeeded`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("deliveries\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var events *string
	if err := d.Pool.QueryRow(ctx, `SELECT to_regclass($1)::text`, tn.Table("webhook_events")).Scan(&events); err != nil || events != nil {
		t.Fatalf("webhook_events still there (%v, %v)", events, err)
	}
}

// No tenant migration gives daily_usage, whose columns are all of fixed
// width or plainly stored, a TOAST table: two more relations per tenant
// that nothing would ever use.
func TestDailyUsageHasNoToastTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := dbtest.Migrated(t)
	m, err := migrate.New(migrate.Config{Pool: d.Pool, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	tn := createOrgs(t, d, 1)[0]
	if _, err := m.Tenant(ctx, tn); err != nil {
		t.Fatal(err)
	}
	var toast bool
	if err := d.Pool.QueryRow(ctx, `SELECT reltoastrelid <> 0 FROM pg_class WHERE oid = $1::regclass`,
		tn.Table("daily_usage")).Scan(&toast); err != nil {
		t.Fatal(err)
	}
	if toast {
		t.Fatal("daily_usage has a TOAST table")
	}
}

// River's job table keeps no GIN index (migration river/0002): River's own
// migrations index every job's args and metadata in two, which nothing the
// platform runs reads, and which every job insert and state change paid for.
// The one job list the platform filters on arguments (a message's delivery
// job) has its partial btree instead.
func TestRiverJobIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := dbtest.Migrated(t)
	indexes := map[string]string{}
	rows, err := d.Pool.Query(ctx, `SELECT indexname, indexdef FROM pg_indexes
		WHERE schemaname = 'river' AND tablename = 'river_job'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			t.Fatal(err)
		}
		indexes[name] = def
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for name, def := range indexes {
		if strings.Contains(strings.ToLower(def), "using gin") {
			t.Errorf("river_job keeps the GIN index %s: %s", name, def)
		}
	}
	def, ok := indexes["river_job_message_delivery_idx"]
	if !ok || !strings.Contains(def, "WHERE (kind = 'message_delivery'::text)") {
		t.Errorf("river_job_message_delivery_idx = %q, want the partial index on delivery jobs", def)
	}
	// River's own indexes stay: its fetch, its cleaner and unique jobs.
	for _, name := range []string{"river_job_pkey", "river_job_prioritized_fetching_index",
		"river_job_state_and_finalized_at_index", "river_job_unique_idx", "river_job_kind"} {
		if _, ok := indexes[name]; !ok {
			t.Errorf("River's index %s is missing", name)
		}
	}
}
