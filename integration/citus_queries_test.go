package integration

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bizmsg/platform/platform/sqlq"
)

// citusQueries is the directory of the named queries that name Citus's
// functions and catalogs (citus_schema_distribute, pg_dist_schema, …),
// which only a Citus coordinator has: platform/sqlq's
// TestNamedQueriesPrepare, on one server, leaves them to
// checkCitusQueries.
const citusQueries = "../platform/migrate/queries/citus"

// checkCitusQueries prepares every named query of citusQueries on the
// coordinator (pool) and plans it (EXPLAIN EXECUTE with NULL arguments;
// EXPLAIN without ANALYZE runs nothing), as TestNamedQueriesPrepare does
// the others: one naming a function, a column or a catalog Citus does not
// have, or that does not parse, fails here.
func checkCitusQueries(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := t.Context()
	q, err := sqlq.Load(os.DirFS(citusQueries), ".")
	if err != nil {
		t.Fatal(err)
	}
	names := q.Names()
	slices.Sort(names)
	if len(names) < 5 {
		t.Fatalf("found %d Citus queries in %s (%v): the directory moved", len(names), citusQueries, names)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, name := range names {
		args := sqlq.Args{}
		for _, p := range q.Params(name) {
			args[p] = nil
		}
		text, vals, err := q.Pgx(name, "", args)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		stmt := "citus_query_" + name
		if _, err := conn.Conn().Prepare(ctx, stmt, text); err != nil {
			t.Errorf("%s does not prepare on the coordinator: %v\n%s", name, err, text)
			continue
		}
		explain := "EXPLAIN EXECUTE " + pgx.Identifier{stmt}.Sanitize()
		if len(vals) > 0 {
			explain += "(" + strings.TrimSuffix(strings.Repeat("NULL, ", len(vals)), ", ") + ")"
		}
		if _, err := conn.Exec(ctx, explain); err != nil {
			t.Errorf("%s does not plan on the coordinator: %v", name, err)
		}
	}
	if t.Failed() {
		return
	}
	t.Logf("the %d Citus queries (%s) prepare and plan on the coordinator", len(names), strings.Join(names, ", "))
}
