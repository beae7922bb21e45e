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
// sqlq's test prepares every named query of the repository against a
// migrated database, so a query that does not parse or plan fails it.
package sqlq

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/schema"
)

// Ext is the extension of a named query's file.
const Ext = ".sql"

// Queries are one package's named queries, by name.
type Queries struct {
	text map[string]string
}

// Load reads the named queries of the .sql files in directory dir of
// fsys (a package's embed.FS): one query per file, named by the file's
// name without .sql.
func Load(fsys fs.FS, dir string) (*Queries, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("named queries: %w", err)
	}
	q := &Queries{text: map[string]string{}}
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
		q.text[strings.TrimSuffix(e.Name(), Ext)] = string(b)
	}
	if len(q.text) == 0 {
		return nil, fmt.Errorf("named queries: no %s files in %s", Ext, dir)
	}
	return q, nil
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
