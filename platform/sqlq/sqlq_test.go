package sqlq_test

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/bizmsg/platform/platform/sqlq"
)

// preparable turns a named query into a statement Postgres can prepare,
// as Pgx writes it for tenant t with the fragments it may include (its
// package's and every other package's, as a caller would pass them), and
// returns it with its number of parameters.
func preparable(t *testing.T, file string, r repoQueries, tn db.Tenant) (string, int) {
	t.Helper()
	dir := filepath.Dir(file)
	fsys := fstest.MapFS{"queries/q.sql": {Data: []byte(r.queries[file])}}
	var extra []sqlq.Fragment
	for fdir, frags := range r.fragments {
		for name, text := range frags {
			if fdir == dir {
				fsys["queries/"+sqlq.FragmentDir+"/"+name+sqlq.Ext] = &fstest.MapFile{Data: []byte(text)}
			} else {
				extra = append(extra, sqlq.Fragment{Name: name, Text: text})
			}
		}
	}
	q, err := sqlq.Load(fsys, "queries", extra...)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	args := sqlq.Args{}
	for _, n := range q.Params("q") {
		args[n] = nil
	}
	stmt, vals, err := q.Pgx("q", tn.Quoted(), args)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return stmt, len(vals)
}

// repoQueries are the named queries of the repository by file, and its
// fragments by their directory of named queries and name.
type repoQueries struct {
	queries   map[string]string
	fragments map[string]map[string]string
}

// namedQueries finds every named query of the repository, the .sql files
// in a directory named queries outside migrations/ (a queries/citus
// directory is not one: its statements need a Citus coordinator, and
// integration's checkCitusQueries prepares them there), and every
// fragment, those of queries/fragments; a fragment's name is the
// repository's once, so that any package may be handed it.
func namedQueries(t *testing.T) repoQueries {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out := repoQueries{queries: map[string]string{}, fragments: map[string]map[string]string{}}
	named := map[string]string{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "migrations" || d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || filepath.Ext(p) != sqlq.Ext {
			return nil
		}
		parent := filepath.Dir(p)
		isQuery := filepath.Base(parent) == "queries"
		isFragment := filepath.Base(parent) == sqlq.FragmentDir && filepath.Base(filepath.Dir(parent)) == "queries"
		if !isQuery && !isFragment {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if isQuery {
			out.queries[rel] = string(b)
			return nil
		}
		dir, name := filepath.Dir(filepath.Dir(rel)), strings.TrimSuffix(filepath.Base(p), sqlq.Ext)
		if other, dup := named[name]; dup {
			t.Errorf("fragment %s: %s has one of the same name", rel, other)
		}
		named[name] = rel
		if out.fragments[dir] == nil {
			out.fragments[dir] = map[string]string{}
		}
		out.fragments[dir][name] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestNamedQueriesPrepare prepares every named query of the repository on
// a freshly migrated database (central, network, river and one tenant
// schema) and plans it (EXPLAIN EXECUTE with NULL arguments; EXPLAIN
// without ANALYZE runs nothing): a query naming a column, a table or a
// function that is not there, or that does not parse, fails here rather
// than on the request that first runs it.
func TestNamedQueriesPrepare(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := dbtest.Migrated(t)
	m, err := migrate.New(migrate.Config{Pool: d.Pool, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	tn := db.Tenant{OrgID: 1, Schema: db.SchemaFor(1)}
	if _, err := m.Tenant(ctx, tn); err != nil {
		t.Fatal(err)
	}
	repo := namedQueries(t)
	if len(repo.queries) < 10 || !slices.ContainsFunc(slices.Collect(maps.Keys(repo.queries)), func(p string) bool {
		return strings.HasPrefix(p, filepath.Join("platform", "accounts", "queries"))
	}) {
		t.Fatalf("found %d named queries, none of platform/accounts: the walk is broken", len(repo.queries))
	}
	conn, err := d.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for file := range repo.queries {
		stmt, n := preparable(t, file, repo, tn)
		name := "q_" + strconv.Itoa(len(file)) + "_" + strings.NewReplacer("/", "_", ".", "_").Replace(file)
		if _, err := conn.Conn().Prepare(ctx, name, stmt); err != nil {
			t.Errorf("%s does not prepare: %v\n%s", file, err, stmt)
			continue
		}
		nulls := strings.TrimSuffix(strings.Repeat("NULL, ", n), ", ")
		explain := "EXPLAIN EXECUTE " + pgx.Identifier{name}.Sanitize()
		if n > 0 {
			explain += "(" + nulls + ")"
		}
		if _, err := conn.Exec(ctx, explain); err != nil {
			t.Errorf("%s does not plan: %v", file, err)
		}
	}
}

// TestLoadAndArgs checks Load's naming and refusals and how Args fill a
// query: the schema as a quoted identifier, values as literals, quotes
// escaped.
func TestLoadAndArgs(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"q/one.sql":   {Data: []byte("-- one row\nSELECT ?v::text FROM ?schema.templates\n")},
		"q/notes.txt": {Data: []byte("not a query")},
	}
	q, err := sqlq.Load(fsys, "q")
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Names(); !slices.Equal(got, []string{"one"}) {
		t.Fatalf("Names = %v", got)
	}
	d := dbtest.Open(t, dbtest.NewDatabase(t))
	tn := db.Tenant{OrgID: 7, Schema: db.SchemaFor(7)}
	got := q.Raw(d.Bun, "one", sqlq.Args{"v": "it's", "schema": tn.SchemaIdent()}).String()
	if want := "-- one row\nSELECT 'it''s'::text FROM \"tenant_7\".templates\n"; got != want {
		t.Fatalf("Raw = %q, want %q", got, want)
	}
	if err := q.Raw(d.Bun, "two", nil).Scan(context.Background()); err == nil || !strings.Contains(err.Error(), `no query "two"`) {
		t.Fatalf("unknown query: %v", err)
	}
	bad := fstest.MapFS{"q/bad.sql": {Data: []byte("-- the ?v\nSELECT 1\n")}}
	if _, err := sqlq.Load(bad, "q"); err == nil || !strings.Contains(err.Error(), "question mark") {
		t.Fatalf("Load of a ? in a comment: %v", err)
	}
	if _, err := sqlq.Load(fstest.MapFS{"q/x.txt": {}}, "q"); err == nil {
		t.Fatal("Load of a directory without queries succeeded")
	}
}

// TestPgx checks how Pgx writes a query for pgx: ?schema as the quoted
// schema, each other name one $n in the order names first appear (a name
// used twice is one parameter), \? a literal question mark, a cast kept,
// and its refusals.
func TestPgx(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{"q/one.sql": {Data: []byte(
		"SELECT ?b::int, ?a::text, ?b::int, '\\?' FROM ?schema.t WHERE x ?| array[?a] AND y = ?1\n")}}
	q, err := sqlq.Load(fsys, "q")
	if err != nil {
		t.Fatal(err)
	}
	tn := db.Tenant{OrgID: 7, Schema: db.SchemaFor(7)}
	text, args, err := q.Pgx("one", tn.Quoted(), sqlq.Args{"a": "x", "b": 2, "unused": 3})
	if err != nil {
		t.Fatal(err)
	}
	want := "SELECT $1::int, $2::text, $1::int, '?' FROM \"tenant_7\".t WHERE x ?| array[$2] AND y = ?1\n"
	if text != want || !slices.Equal(args, []any{2, "x"}) {
		t.Fatalf("Pgx = %q %v, want %q [2 x]", text, args, want)
	}
	if got := q.Params("one"); !slices.Equal(got, []string{"b", "a"}) {
		t.Fatalf("Params = %v", got)
	}
	if _, _, err := q.Pgx("one", tn.Quoted(), sqlq.Args{"a": "x"}); err == nil || !strings.Contains(err.Error(), `no argument "b"`) {
		t.Fatalf("missing argument: %v", err)
	}
	if _, _, err := q.Pgx("one", "", sqlq.Args{"a": "x", "b": 2}); err == nil || !strings.Contains(err.Error(), "no schema") {
		t.Fatalf("missing schema: %v", err)
	}
	if _, _, err := q.Pgx("two", tn.Quoted(), nil); err == nil || !strings.Contains(err.Error(), `no query "two"`) {
		t.Fatalf("unknown query: %v", err)
	}
}

// TestFragments checks how Load includes fragments: a package's own from
// queries/fragments and another's passed to it, a fragment that includes
// another, each written once; the parameters Pgx numbers across them; and
// Load's refusals (an unknown name, one given twice, a fragment that
// includes itself, a question mark in a fragment's comment).
func TestFragments(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"q/one.sql":             {Data: []byte("-- items then steps\nWITH items AS (?{items}),\n?{steps}\nSELECT * FROM out WHERE '\\?{x}' <> ?c\n")},
		"q/fragments/items.sql": {Data: []byte("-- one item\nSELECT ?a::int AS v\n")},
		"q/fragments/steps.sql": {Data: []byte("mid AS (SELECT v + ?b AS v FROM items),\n?{other}\n")},
	}
	other := sqlq.Fragment{Name: "other", Text: "out AS (SELECT v * ?a AS v FROM mid)\n"}
	q, err := sqlq.Load(fsys, "q", other)
	if err != nil {
		t.Fatal(err)
	}
	text, args, err := q.Pgx("one", "", sqlq.Args{"a": 1, "b": 2, "c": "x"})
	if err != nil {
		t.Fatal(err)
	}
	want := "-- items then steps\nWITH items AS (-- one item\nSELECT $1::int AS v),\n" +
		"mid AS (SELECT v + $2 AS v FROM items),\nout AS (SELECT v * $1 AS v FROM mid)\n" +
		"SELECT * FROM out WHERE '?{x}' <> $3\n"
	if text != want || !slices.Equal(args, []any{1, 2, "x"}) {
		t.Fatalf("Pgx = %q %v, want %q [1 2 x]", text, args, want)
	}
	if got := slices.Sorted(slices.Values(q.Names())); !slices.Equal(got, []string{"one"}) {
		t.Fatalf("Names = %v: a fragment is no query", got)
	}
	d := dbtest.Open(t, dbtest.NewDatabase(t))
	var v int
	if err := q.Raw(d.Bun, "one", sqlq.Args{"a": 3, "b": 4, "c": "y"}).Scan(context.Background(), &v); err != nil || v != 21 {
		t.Fatalf("Raw = %d, %v; want (3+4)*3 = 21", v, err)
	}
	f, err := sqlq.ReadFragment(fsys, "q/fragments/items.sql")
	if err != nil || f.Name != "items" || !strings.Contains(f.Text, "?a::int") {
		t.Fatalf("ReadFragment = %+v, %v", f, err)
	}
	for name, c := range map[string]struct {
		fsys  fstest.MapFS
		extra []sqlq.Fragment
		want  string
	}{
		"unknown":   {fstest.MapFS{"q/one.sql": {Data: []byte("SELECT 1 FROM ?{nope}")}}, nil, `no fragment "nope"`},
		"twice":     {fsys, []sqlq.Fragment{other, {Name: "items", Text: "SELECT 1"}}, `"items" given twice`},
		"itself":    {fstest.MapFS{"q/one.sql": {Data: []byte("?{a}")}, "q/fragments/a.sql": {Data: []byte("?{a}")}}, nil, "more than"},
		"unclosed":  {fstest.MapFS{"q/one.sql": {Data: []byte("SELECT ?{a")}}, nil, "without its }"},
		"comment ?": {fstest.MapFS{"q/one.sql": {Data: []byte("?{a}")}, "q/fragments/a.sql": {Data: []byte("-- ?x\nSELECT 1")}}, nil, "question mark"},
	} {
		if _, err := sqlq.Load(c.fsys, "q", c.extra...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Load = %v, want an error with %q", name, err, c.want)
		}
	}
}

// TestPgxRows checks how PgxRows writes a statement's one VALUES row once
// per row: the head and tail once, each row's names numbered after the
// previous row's (a name used twice in the row is one parameter), the
// values row by row, and its refusals.
func TestPgxRows(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"q/ins.sql": {Data: []byte("INSERT INTO ?schema.t (a, b, c)\nVALUES (?a::bigint, lower(?b::text), ?a::bigint)\nRETURNING id, '(\\?'\n")},
		"q/sel.sql": {Data: []byte("SELECT ?a::int\n")},
		"q/two.sql": {Data: []byte("INSERT INTO t VALUES (?a) ON CONFLICT DO NOTHING; INSERT INTO u VALUES (?a)\n")},
		"q/out.sql": {Data: []byte("INSERT INTO t SELECT * FROM (VALUES (?a::int)) v WHERE ?b::bool\n")},
	}
	q, err := sqlq.Load(fsys, "q")
	if err != nil {
		t.Fatal(err)
	}
	tn := db.Tenant{OrgID: 7, Schema: db.SchemaFor(7)}
	text, args, err := q.PgxRows("ins", tn.Quoted(), []sqlq.Args{{"a": 1, "b": "x"}, {"a": 2, "b": "y", "unused": 0}, {"b": "z", "a": 3}})
	if err != nil {
		t.Fatal(err)
	}
	want := "INSERT INTO \"tenant_7\".t (a, b, c)\nVALUES ($1::bigint, lower($2::text), $1::bigint), " +
		"($3::bigint, lower($4::text), $3::bigint), ($5::bigint, lower($6::text), $5::bigint)\nRETURNING id, '(?'\n"
	if text != want || !slices.Equal(args, []any{1, "x", 2, "y", 3, "z"}) {
		t.Fatalf("PgxRows = %q %v, want %q [1 x 2 y 3 z]", text, args, want)
	}
	ctx := context.Background()
	d := dbtest.Open(t, dbtest.NewDatabase(t))
	if _, err := d.Pool.Exec(ctx, `CREATE SCHEMA tenant_7; CREATE TABLE tenant_7.t (id bigserial, a bigint, b text, c bigint)`); err != nil {
		t.Fatal(err)
	}
	rows, err := d.Pool.Query(ctx, text, append([]any{pgx.QueryExecModeExec}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (int64, error) {
		var id int64
		var lit string
		return id, r.Scan(&id, &lit)
	})
	if err != nil || !slices.Equal(ids, []int64{1, 2, 3}) {
		t.Fatalf("the insert returned %v, %v", ids, err)
	}
	var rowsOut string
	if err := d.Pool.QueryRow(ctx, `SELECT string_agg(a || b || c, ' ' ORDER BY id) FROM tenant_7.t`).Scan(&rowsOut); err != nil || rowsOut != "1x1 2y2 3z3" {
		t.Fatalf("the rows inserted are %q, %v", rowsOut, err)
	}
	one, oneArgs, err := q.PgxRows("ins", tn.Quoted(), []sqlq.Args{{"a": 1, "b": "x"}})
	pgxText, pgxArgs, pgxErr := q.Pgx("ins", tn.Quoted(), sqlq.Args{"a": 1, "b": "x"})
	if err != nil || pgxErr != nil || one != pgxText || !slices.Equal(oneArgs, pgxArgs) {
		t.Fatalf("one row = %q %v %v, Pgx = %q %v %v", one, oneArgs, err, pgxText, pgxArgs, pgxErr)
	}
	for _, c := range []struct {
		name, schema string
		rows         []sqlq.Args
		want         string
	}{
		{"ins", tn.Quoted(), []sqlq.Args{{"a": 1, "b": "x"}, {"a": 2}}, `row 1 has no argument "b"`},
		{"ins", tn.Quoted(), nil, "no rows"},
		{"ins", "", []sqlq.Args{{"a": 1, "b": "x"}}, "no schema"},
		{"sel", "", []sqlq.Args{{"a": 1}}, "no one VALUES row"},
		{"two", "", []sqlq.Args{{"a": 1}}, "no one VALUES row"},
		{"out", "", []sqlq.Args{{"a": 1, "b": true}}, "outside its VALUES row"},
		{"none", "", []sqlq.Args{{}}, `no query "none"`},
	} {
		if _, _, err := q.PgxRows(c.name, c.schema, c.rows); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("PgxRows(%s, %q, %v) = %v, want an error with %q", c.name, c.schema, c.rows, err, c.want)
		}
	}
}
