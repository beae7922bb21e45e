package db_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
)

// RunInTx is one transaction seen by bun and by pgx: what either writes the
// other reads before the commit, nothing is seen outside it before, both
// commit together and AfterCommit's functions run after; when fn fails
// both writes roll back and nothing runs. The pgx view neither ends the
// transaction nor opens savepoints.
func TestRunInTx(t *testing.T) {
	t.Parallel()
	d := dbtest.Open(t, dbtest.NewDatabase(t))
	ctx := context.Background()
	if _, err := d.Pool.Exec(ctx, `CREATE TABLE marks (n int)`); err != nil {
		t.Fatal(err)
	}
	count := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) int {
		t.Helper()
		var n int
		if err := q.QueryRow(ctx, `SELECT count(*) FROM marks`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	failed := errors.New("fn failed")
	for _, tt := range []struct {
		name     string
		fnErr    error
		wantRows int
		wantRan  bool
	}{
		{"committed", nil, 2, true},
		{"rolled back", failed, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := d.Pool.Exec(ctx, `TRUNCATE marks`); err != nil {
				t.Fatal(err)
			}
			ran := false
			err := d.RunInTx(ctx, func(tx db.Tx) error {
				if _, err := tx.Bun.NewRaw(`INSERT INTO marks VALUES (?)`, 1).Exec(ctx); err != nil {
					return err
				}
				if _, err := tx.Pgx().Exec(ctx, `INSERT INTO marks VALUES ($1)`, 2); err != nil {
					return err
				}
				var inTx int
				if err := tx.Bun.NewRaw(`SELECT count(*) FROM marks`).Scan(ctx, &inTx); err != nil {
					return err
				}
				if inTx != 2 || count(tx.Pgx()) != 2 || count(d.Pool) != 0 {
					t.Errorf("in the transaction bun counts %d, pgx %d; outside %d", inTx, count(tx.Pgx()), count(d.Pool))
				}
				for _, end := range []error{tx.Pgx().Commit(ctx), tx.Pgx().Rollback(ctx), func() error { _, err := tx.Pgx().Begin(ctx); return err }()} {
					if end == nil {
						t.Error("the pgx view ended the transaction or opened a savepoint")
					}
				}
				if err := db.AfterCommit(tx.Pgx(), func() { ran = true }); err != nil {
					return err
				}
				return tt.fnErr
			})
			if !errors.Is(err, tt.fnErr) {
				t.Fatalf("RunInTx = %v, want %v", err, tt.fnErr)
			}
			if got := count(d.Pool); got != tt.wantRows || ran != tt.wantRan {
				t.Fatalf("after: %d rows, AfterCommit ran %v; want %d, %v", got, ran, tt.wantRows, tt.wantRan)
			}
		})
	}
}

// bun's statements carry their arguments as literals, so they run on the
// simple protocol and prepare nothing on the connection: a text per value
// would otherwise be prepared each time and crowd pgx's statement cache.
func TestBunPreparesNothing(t *testing.T) {
	t.Parallel()
	d := dbtest.Open(t, dbtest.NewDatabase(t))
	ctx := context.Background()
	err := d.RunInTx(ctx, func(tx db.Tx) error {
		for i := range 3 {
			var n int
			if err := tx.Bun.NewSelect().ColumnExpr("?::int", i).Scan(ctx, &n); err != nil || n != i {
				t.Fatalf("select %d = %d, %v", i, n, err)
			}
		}
		var prepared int
		if err := tx.Pgx().QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements`,
			pgx.QueryExecModeSimpleProtocol).Scan(&prepared); err != nil {
			return err
		}
		if prepared != 0 {
			t.Errorf("%d statements prepared on the connection by bun's selects", prepared)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// QueryPgx runs a bun statement in a pgx transaction begun elsewhere.
func TestQueryPgx(t *testing.T) {
	t.Parallel()
	d := dbtest.Open(t, dbtest.NewDatabase(t))
	ctx := context.Background()
	err := db.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE seen (s text)`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO seen VALUES ('it''s')`); err != nil {
			return err
		}
		var s string
		if err := d.QueryPgx(ctx, tx, d.Bun.NewSelect().Table("seen").Column("s").Where("s = ?", "it's")).Scan(&s); err != nil {
			return err
		}
		if s != "it's" {
			t.Errorf("QueryPgx read %q", s)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A tenant names its tables for bun as quoted identifiers, a quote in a
// name doubled.
func TestTenantIdents(t *testing.T) {
	t.Parallel()
	d := dbtest.Open(t, dbtest.NewDatabase(t))
	tn := db.Tenant{OrgID: 7, Schema: db.SchemaFor(7)}
	got := d.Bun.NewSelect().ModelTableExpr(tn.TableAs("templates", "t")).ColumnExpr("t.id").String()
	if want := `"tenant_7"."templates" AS "t"`; !strings.Contains(got, want) {
		t.Errorf("TableAs: %s, want %s in it", got, want)
	}
	odd := db.Tenant{Schema: `x"y`}
	if got := d.Bun.NewSelect().TableExpr("?", odd.SchemaIdent()).String(); !strings.Contains(got, `"x""y"`) {
		t.Errorf("SchemaIdent of a quote: %s", got)
	}
}
