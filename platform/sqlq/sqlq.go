// Package sqlq hands out a package's named queries: the statements bun's
// builder does not say well (an upsert whose SET reads the old row, a
// statement with a CTE, a join read into one struct), each in an .sql file
// the package embeds and runs through bun.NewRaw, so no Go file holds SQL
// (docs/design.md, §The data layer).
//
// A query's text names its arguments ?name (a cast after it is usual:
// ?email::text), filled by bun from an Args: a bun.Ident as a quoted
// identifier, any other value as a literal. ?schema is the tenant's
// schema, always db.Tenant.SchemaIdent (a tenant table is
// ?schema.templates): an identifier quoted by bun, never text joined to
// the query; every other ?name is a value. A literal question mark is
// written \?, and a comment holds none (bun would fill it there too).
//
// A statement every message runs stays prepared on pgx (db.Prepared):
// Pgx writes the same file as a pgx statement, ?schema as the tenant's
// quoted schema in the text and every other ?name a parameter $n, with its
// arguments in their order. Such a statement is parsed and planned once
// per connection instead of at every run, which bun's literals cannot be
// (docs/design.md, §The data layer).
//
// A statement whose VALUES list has as many rows as its caller has (a
// multi-row insert Citus routes to one node) is kept with one row in its
// file, so it prepares as it is; PgxRows writes that row once per row
// given, each with parameters of its own.
//
// A piece of text several statements share is a fragment, written once
// and included where a query writes ?{name} (the steps of a WITH clause,
// the rows of a FROM), its comments on lines of their own before its text
// (what follows ?{name} goes on its last line). A package's own fragments
// are the .sql files of dir/fragments (FragmentDir), each named by its
// file's name without .sql; a fragment of another package is one that
// package hands out with ReadFragment (pace.AllowStep) and the caller
// passes to Load. Load includes them, and the fragments they include,
// before anything else reads the text, so Raw and Pgx see one statement;
// an unknown name, a name given twice or a fragment that includes itself
// fails Load. This is the one way a statement is put together from parts:
// no Go code joins SQL text.
//
// sqlq's test prepares every named query of the repository against a
// migrated database, so a query that does not parse or plan fails it. Two
// kinds are checked less or elsewhere. A DDL statement (the migrator's
// CREATE SCHEMA and version table) prepares on the protocol, where
// Postgres parses it but neither analyses nor plans it: the test checks
// its syntax, and platform/migrate's tests run it. A statement naming
// Citus's functions or catalogs, which one server has not, is kept in a
// directory queries/citus (platform/migrate's), outside the test's walk
// of directories named queries: integration's TestCitusCluster prepares
// and plans each on a Citus coordinator (checkCitusQueries).
package sqlq

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/schema"
)

// Ext is the extension of a named query's file.
const Ext = ".sql"

// FragmentDir is the directory, in a package's directory of named
// queries, of its fragments.
const FragmentDir = "fragments"

// maxDepth bounds how deep fragments include fragments: past it, one
// includes itself.
const maxDepth = 8

// Fragment is a piece of a statement, included where a query writes
// ?{Name}.
type Fragment struct {
	Name string
	Text string
}

// ReadFragment reads the fragment in file p of fsys (a package's
// embed.FS), named by the file's name without .sql: what a package hands
// out for another's queries to include (Load's extra).
func ReadFragment(fsys fs.FS, p string) (Fragment, error) {
	b, err := fs.ReadFile(fsys, p)
	if err != nil {
		return Fragment{}, fmt.Errorf("fragment: %w", err)
	}
	name := strings.TrimSuffix(path.Base(p), Ext)
	if err := checkComments(string(b)); err != nil {
		return Fragment{}, fmt.Errorf("fragment %s: %w", name, err)
	}
	return Fragment{Name: name, Text: string(b)}, nil
}

// Queries are one package's named queries, by name.
type Queries struct {
	text map[string]string
	pgx  map[string]pgxQuery
	rows map[string]rowsQuery
}

// Load reads the named queries of the .sql files in directory dir of
// fsys (a package's embed.FS): one query per file, named by the file's
// name without .sql, with the fragments it includes (?{name}) from
// dir/fragments and extra (another package's, ReadFragment).
func Load(fsys fs.FS, dir string, extra ...Fragment) (*Queries, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("named queries: %w", err)
	}
	frags, err := fragments(fsys, path.Join(dir, FragmentDir), extra)
	if err != nil {
		return nil, fmt.Errorf("named queries: %w", err)
	}
	q := &Queries{text: map[string]string{}, pgx: map[string]pgxQuery{}, rows: map[string]rowsQuery{}}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), Ext) {
			continue
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("named queries: %w", err)
		}
		if err := checkComments(string(b)); err != nil {
			return nil, fmt.Errorf("named queries: %s: %w", e.Name(), err)
		}
		text, err := include(string(b), frags, 0)
		if err != nil {
			return nil, fmt.Errorf("named queries: %s: %w", e.Name(), err)
		}
		name := strings.TrimSuffix(e.Name(), Ext)
		q.text[name], q.pgx[name] = text, parsePgx(text)
		if r, ok := parseRows(text); ok {
			q.rows[name] = r
		}
	}
	if len(q.text) == 0 {
		return nil, fmt.Errorf("named queries: no %s files in %s", Ext, dir)
	}
	return q, nil
}

// fragments reads the fragments of directory dir (none when it does not
// exist) and adds extra, by name; a name given twice is an error.
func fragments(fsys fs.FS, dir string, extra []Fragment) (map[string]string, error) {
	out := map[string]string{}
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("fragments: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), Ext) {
			continue
		}
		f, err := ReadFragment(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		extra = append(extra, f)
	}
	for _, f := range extra {
		if _, dup := out[f.Name]; dup {
			return nil, fmt.Errorf("fragment %q given twice", f.Name)
		}
		out[f.Name] = f.Text
	}
	return out, nil
}

// include writes text with each ?{name} replaced by fragment name, itself
// included; depth is how deep in fragments text is.
func include(text string, frags map[string]string, depth int) (string, error) {
	if !strings.Contains(text, "?{") {
		return text, nil
	}
	if depth >= maxDepth {
		return "", fmt.Errorf("fragments include each other more than %d deep", maxDepth)
	}
	var b strings.Builder
	for {
		i := strings.Index(text, "?{")
		if i < 0 {
			b.WriteString(text)
			return b.String(), nil
		}
		if i > 0 && text[i-1] == '\\' { // \? is a literal question mark
			b.WriteString(text[:i+2])
			text = text[i+2:]
			continue
		}
		end := strings.IndexByte(text[i:], '}')
		if end < 0 {
			return "", errors.New("?{ without its }")
		}
		name := text[i+2 : i+end]
		f, ok := frags[name]
		if !ok {
			return "", fmt.Errorf("no fragment %q", name)
		}
		f, err := include(strings.TrimRight(f, "\n"), frags, depth+1)
		if err != nil {
			return "", fmt.Errorf("fragment %s: %w", name, err)
		}
		b.WriteString(text[:i])
		b.WriteString(f)
		text = text[i+end+1:]
	}
}

// Raw returns query name with args as a bun query on idb (the database, a
// connection or a transaction), to Scan or Exec. An unknown name fails
// the query when it runs.
func (q *Queries) Raw(idb bun.IDB, name string, args Args) *bun.RawQuery {
	text, ok := q.text[name]
	r := idb.NewRaw(text, args)
	if !ok {
		r = r.Err(fmt.Errorf("named queries: no query %q", name))
	}
	return r
}

// Names returns the names of the queries (tests).
func (q *Queries) Names() []string {
	out := make([]string, 0, len(q.text))
	for n := range q.text {
		out = append(out, n)
	}
	return out
}

// Args are a named query's arguments: ?name in its text is Args["name"].
// A name the query uses and Args lacks stays ?name in the text, which
// Postgres refuses.
type Args map[string]any

// AppendNamedArg appends argument name as bun appends an argument: a
// query appender (bun.Ident) as itself, a value as a literal.
func (a Args) AppendNamedArg(gen schema.QueryGen, b []byte, name string) ([]byte, bool) {
	v, ok := a[name]
	if !ok {
		return b, false
	}
	if qa, ok := v.(schema.QueryAppender); ok {
		out, err := qa.AppendQuery(gen, b)
		if err != nil {
			return dialect.AppendError(b, err), true
		}
		return out, true
	}
	return gen.Append(b, v), true
}

// checkComments refuses a question mark in a -- comment: bun fills ?name
// wherever it is, and a value holding a newline would end the comment.
func checkComments(text string) error {
	for i, line := range strings.Split(text, "\n") {
		if _, comment, ok := strings.Cut(line, "--"); ok && strings.Contains(comment, "?") {
			return fmt.Errorf("line %d: a comment holds a question mark", i+1)
		}
	}
	return nil
}

// Pgx returns named query name as a pgx statement (for db.Prepared) and
// its arguments: ?schema written as schema (db.Tenant.Quoted, the tenant's
// quoted schema; "" for a query that names none), each other ?name a
// parameter $n numbered in the order the names first appear, and args'
// values in that order. A name args lacks, or an unknown query, is an
// error.
func (q *Queries) Pgx(name, schema string, args Args) (string, []any, error) {
	pq, ok := q.pgx[name]
	if !ok {
		return "", nil, fmt.Errorf("named queries: no query %q", name)
	}
	out := make([]any, len(pq.names))
	for i, n := range pq.names {
		v, ok := args[n]
		if !ok {
			return "", nil, fmt.Errorf("named query %s: no argument %q", name, n)
		}
		out[i] = v
	}
	if pq.schemas == 0 {
		return pq.fixed, out, nil
	}
	if schema == "" {
		return "", nil, fmt.Errorf("named query %s: it names ?schema and no schema was given", name)
	}
	var b strings.Builder
	b.Grow(pq.size + len(schema)*pq.schemas)
	pq.write(&b, schema, 0)
	return b.String(), out, nil
}

// Params returns the names of query name's parameters as Pgx numbers
// them: the first is $1 (tests).
func (q *Queries) Params(name string) []string {
	return append([]string(nil), q.pgx[name].names...)
}

// pgxQuery is a named query cut for Pgx: its text in parts, and its
// parameters' names in their order; fixed is the whole statement of a
// query that names no ?schema, written once (keys' authentication, run
// with every Tenant API request, writes no text per run).
type pgxQuery struct {
	fixed   string
	parts   []pgxPart
	names   []string
	size    int
	schemas int
}

// pgxPart is a literal piece of a query's text, its ?schema, or its
// parameter number param.
type pgxPart struct {
	lit    string
	schema bool
	param  int
}

// parsePgx cuts text at its ?names (a \? is a literal question mark, as
// bun reads it).
func parsePgx(text string) pgxQuery {
	var q pgxQuery
	nums := map[string]int{}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			q.parts = append(q.parts, pgxPart{lit: lit.String()})
			q.size += lit.Len()
			lit.Reset()
		}
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '\\' && i+1 < len(text) && text[i+1] == '?' {
			lit.WriteByte('?')
			i++
			continue
		}
		if c != '?' {
			lit.WriteByte(c)
			continue
		}
		j := i + 1
		for j < len(text) && (text[j] == '_' || isAlnum(text[j])) {
			j++
		}
		if j == i+1 || isDigit(text[i+1]) {
			lit.WriteByte(c)
			continue
		}
		flush()
		name := text[i+1 : j]
		if name == "schema" {
			q.parts = append(q.parts, pgxPart{schema: true})
			q.schemas++
		} else {
			n, ok := nums[name]
			if !ok {
				n = len(nums) + 1
				nums[name] = n
				q.names = append(q.names, name)
			}
			q.parts = append(q.parts, pgxPart{param: n})
			q.size += 4
		}
		i = j - 1
	}
	flush()
	if q.schemas == 0 {
		var b strings.Builder
		b.Grow(q.size)
		q.write(&b, "", 0)
		q.fixed = b.String()
	}
	return q
}

// PgxRows returns named query name as Pgx does, for a statement whose
// file has one VALUES row (INSERT ... VALUES (?a, ?b) RETURNING ...): the
// row written once per element of rows, separated by commas, the row's
// ?names of rows[i] numbered after those of rows[i-1], and the values in
// that order. The text varies with len(rows), so it is run unprepared
// (pgx.QueryExecModeExec) rather than filling the statement cache, unless
// its lengths recur (the job outbox's one-row insert, through
// db.Prepared). A
// query without exactly one VALUES row, a ?name outside the row, a row
// lacking a name, or no rows, is an error.
func (q *Queries) PgxRows(name, schema string, rows []Args) (string, []any, error) {
	rq, ok := q.rows[name]
	switch {
	case !ok && q.text[name] == "":
		return "", nil, fmt.Errorf("named queries: no query %q", name)
	case !ok:
		return "", nil, fmt.Errorf("named query %s: it has no one VALUES row", name)
	case len(rq.head.names)+len(rq.tail.names) > 0:
		return "", nil, fmt.Errorf("named query %s: a ?name outside its VALUES row", name)
	case len(rows) == 0:
		return "", nil, fmt.Errorf("named query %s: no rows", name)
	}
	if rq.head.schemas+rq.row.schemas+rq.tail.schemas > 0 && schema == "" {
		return "", nil, fmt.Errorf("named query %s: it names ?schema and no schema was given", name)
	}
	width := len(rq.row.names)
	out := make([]any, 0, width*len(rows))
	for i, r := range rows {
		for _, n := range rq.row.names {
			v, ok := r[n]
			if !ok {
				return "", nil, fmt.Errorf("named query %s: row %d has no argument %q", name, i, n)
			}
			out = append(out, v)
		}
	}
	var b strings.Builder
	b.Grow(rq.head.size + rq.tail.size + (rq.row.size+2)*len(rows) + len(schema)*(rq.head.schemas+rq.tail.schemas+rq.row.schemas*len(rows)))
	rq.head.write(&b, schema, 0)
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		rq.row.write(&b, schema, i*width)
	}
	rq.tail.write(&b, schema, 0)
	return b.String(), out, nil
}

// write writes the parts of q to b: ?schema as schema, parameter n as
// $(n+offset).
func (q pgxQuery) write(b *strings.Builder, schema string, offset int) {
	for _, p := range q.parts {
		switch {
		case p.param > 0:
			b.WriteString("$")
			b.WriteString(strconv.Itoa(p.param + offset))
		case p.schema:
			b.WriteString(schema)
		default:
			b.WriteString(p.lit)
		}
	}
}

// rowsQuery is a named query cut for PgxRows: the text before its VALUES
// row, the row (its parentheses included), and the text after it.
type rowsQuery struct {
	head, row, tail pgxQuery
}

// valuesRow finds the keyword VALUES followed by a parenthesis.
var valuesRow = regexp.MustCompile(`(?i)\bVALUES\s*\(`)

// parseRows cuts text at its one VALUES row; ok is false when it has no
// VALUES row, more than one, or one whose parentheses do not close.
func parseRows(text string) (rowsQuery, bool) {
	locs := valuesRow.FindAllStringIndex(text, 2)
	if len(locs) != 1 {
		return rowsQuery{}, false
	}
	start := locs[0][1] - 1
	depth, quoted := 0, false
	for i := start; i < len(text); i++ {
		switch c := text[i]; {
		case c == '\'':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			if depth--; depth == 0 {
				return rowsQuery{
					head: parsePgx(text[:start]),
					row:  parsePgx(text[start : i+1]),
					tail: parsePgx(text[i+1:]),
				}, true
			}
		}
	}
	return rowsQuery{}, false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isAlnum(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
