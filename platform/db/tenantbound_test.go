package db_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
)

// A pool connection serves up to MaxConnTenants tenant schemas: the
// statement that names one more (as text, in a batch, or db.Prepared's)
// is the connection's last; the pool closes it when it is
// released and opens a fresh backend. Statements of tenants it already
// served, and statements naming no tenant, keep it. Without a bound
// (negative) it serves any number.
func TestMaxConnTenants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewDatabase(t)
	setupDB, err := db.Open(ctx, db.Config{URL: url, MaxConns: 1, MaxConnTenants: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer setupDB.Close()
	tenants := make([]db.Tenant, 5)
	for i := range tenants {
		tenants[i] = db.Tenant{OrgID: int64(i + 1), Schema: db.SchemaFor(int64(i + 1))}
		if _, err := setupDB.Pool.Exec(ctx, `CREATE SCHEMA `+tenants[i].Quoted()+`; CREATE TABLE `+tenants[i].Table("t")+` (x int)`); err != nil {
			t.Fatal(err)
		}
	}
	open := func(bound int) (*db.DB, *db.Prepared) {
		d, err := db.Open(ctx, db.Config{URL: url, MaxConns: 1, MaxConnTenants: bound})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Close)
		return d, dbtest.Prepared(t, db.PreparedConfig{DB: d})
	}
	pid := func(d *db.DB) int {
		t.Helper()
		var p int
		if err := d.Pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	read := func(d *db.DB, tn db.Tenant) {
		t.Helper()
		if _, err := d.Pool.Exec(ctx, `SELECT count(*) FROM `+tn.Table("t")); err != nil {
			t.Fatal(err)
		}
	}

	d, prep := open(2)
	first := pid(d)
	for range 3 {
		read(d, tenants[0])
		read(d, tenants[1])
	}
	if p := pid(d); p != first {
		t.Fatalf("the connection was replaced after serving 2 tenants under a bound of 2 (backend %d, then %d)", first, p)
	}
	read(d, tenants[2])
	second := pid(d)
	if second == first {
		t.Fatal("the connection still serves after a third tenant under a bound of 2")
	}

	// In a batch.
	read(d, tenants[0])
	read(d, tenants[1])
	b := &pgx.Batch{}
	b.Queue(`SELECT count(*) FROM ` + tenants[3].Table("t"))
	if err := d.Pool.SendBatch(ctx, b).Close(); err != nil {
		t.Fatal(err)
	}
	third := pid(d)
	if third == second {
		t.Fatal("a batch's statement of a third tenant did not count")
	}

	// db.Prepared's (its second run of a text prepares it).
	read(d, tenants[0])
	read(d, tenants[1])
	q := `SELECT count(*) FROM ` + tenants[4].Table("t") + ` WHERE x = $1::int`
	for range 2 {
		if err := prep.Exec(ctx, nil, q, 1); err != nil {
			t.Fatal(err)
		}
	}
	if pid(d) == third {
		t.Fatal("a prepared statement of a third tenant did not count")
	}

	unbounded, _ := open(-1)
	p := pid(unbounded)
	for _, tn := range tenants {
		read(unbounded, tn)
	}
	if pid(unbounded) != p {
		t.Fatal("a connection without a bound was replaced")
	}
}
