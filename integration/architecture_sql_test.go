package integration

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// sqlFree are the packages whose production Go files may hold SQL
// because they are not production code of the service: the benchmark's
// own statements and the generated API client.
var sqlFree = map[string]string{
	"cmd/platform/bench": "the benchmark's statements measure the database itself",
	"client":             "the generated API client holds no SQL; exempt as a caller outside the service",
}

// notOnBun are the packages whose production Go files still hold SQL
// text: not yet converted to the data layer (docs/design.md, §The data
// layer). The list only shrinks: TestArchitectureSQL fails when a package
// not listed holds SQL, and when a listed one no longer does. Empty
// since campaignrelease, the last, was converted.
var notOnBun = []string{}

// sqlStatement and sqlClause are the words that make a literal SQL: a
// statement's keyword with one of its clauses, both upper case as the
// house writes SQL ("SELECT ... FROM", "UPDATE ... SET", "CREATE
// DATABASE"). A lone keyword (bun's For("UPDATE")) or an upper-case word
// in prose is not a statement.
var (
	sqlStatement = regexp.MustCompile(`\b(SELECT|INSERT\s+INTO|UPDATE|DELETE\s+FROM|WITH|CREATE|ALTER|DROP|TRUNCATE|MERGE\s+INTO|LOCK\s+TABLE|COPY)\b`)
	sqlClause    = regexp.MustCompile(`\b(FROM|INTO|SET|VALUES|WHERE|TABLE|INDEX|SCHEMA|DATABASE|RETURNING|AS|JOIN)\b`)
)

// sqlWhole are statement beginnings that are SQL by themselves.
var sqlWhole = regexp.MustCompile(`\b(INSERT\s+INTO|DELETE\s+FROM|MERGE\s+INTO|LOCK\s+TABLE|TRUNCATE\s+TABLE)\b`)

// isSQL reports whether s holds a SQL statement.
func isSQL(s string) bool {
	if sqlWhole.MatchString(s) {
		return true
	}
	loc := sqlStatement.FindStringIndex(s)
	return loc != nil && sqlClause.MatchString(s[loc[1]:])
}

// sqlLiterals returns the SQL statements of af's string literals, a chain
// of literals joined by + read as one (the non-literal parts as a space),
// each shortened to its first line.
func sqlLiterals(af *ast.File) []string {
	var out []string
	ast.Inspect(af, func(n ast.Node) bool {
		var text string
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if n.Op != token.ADD {
				return true
			}
			parts, lits := concatenation(n)
			if lits == 0 {
				return true
			}
			text = strings.Join(parts, " ")
		case *ast.BasicLit:
			if n.Kind != token.STRING {
				return true
			}
			text, _ = strconv.Unquote(n.Value)
		default:
			return true
		}
		if isSQL(text) {
			first, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
			out = append(out, first)
		}
		return false // a chain's own literals are read with it
	})
	return out
}

// concatenation flattens a chain of +: its string literals unquoted, any
// other operand as "_", and the number of literals.
func concatenation(e ast.Expr) ([]string, int) {
	switch e := e.(type) {
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			l, nl := concatenation(e.X)
			r, nr := concatenation(e.Y)
			return append(l, r...), nl + nr
		}
	case *ast.ParenExpr:
		return concatenation(e.X)
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			s, _ := strconv.Unquote(e.Value)
			return []string{s}, 1
		}
	}
	return []string{"_"}, 0
}

// sqlViolations returns what breaks the rule that no production Go file
// holds SQL outside sqlFree and notOnBun, and that every package of
// notOnBun still does.
func sqlViolations(pkgs []pkgFiles, listed []string) []string {
	var out []string
	holds := map[string]bool{}
	for _, p := range pkgs {
		if _, ok := sqlFree[p.Path]; ok || floors[p.Path] == floorTest {
			continue // the bench, the client, and test harnesses
		}
		for _, f := range p.Files {
			if len(f.SQL) == 0 {
				continue
			}
			holds[p.Path] = true
			if !contains(listed, p.Path) {
				out = append(out, fmt.Sprintf("%s holds SQL (%q): write it with bun's builder or as a named query (platform/sqlq)",
					f.Name, f.SQL[0]))
			}
		}
	}
	for _, p := range listed {
		if !holds[p] {
			out = append(out, fmt.Sprintf("%s holds no SQL any more: take it off notOnBun", p))
		}
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestArchitectureSQL holds production Go files to the data layer: SQL
// text lives in .sql files (bun.NewRaw through platform/sqlq) or is said
// with bun's builder, except in the packages notOnBun lists.
func TestArchitectureSQL(t *testing.T) {
	t.Parallel()
	_, files := modulePackages(t)
	if v := sqlViolations(files, notOnBun); len(v) > 0 {
		t.Fatalf("SQL outside the data layer:\n  %s", strings.Join(v, "\n  "))
	}
}

// TestArchitectureSQLRules shows the check finds SQL in the shapes it is
// written in, ignores what only looks like it, and keeps the list
// shrinking.
func TestArchitectureSQLRules(t *testing.T) {
	t.Parallel()
	found := func(src string) []string {
		af, err := parser.ParseFile(token.NewFileSet(), "x.go", "package x\n"+src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		return sqlLiterals(af)
	}
	for _, src := range []string{
		"const q = `SELECT id FROM central.users WHERE id = $1`",
		`var q = "UPDATE t SET a = 1"`,
		"func f(t T) string { return `SELECT ` + columns + ` FROM ` + t.Table(\"x\") }",
		`var q = "DELETE FROM " + table`,
		`var q = "CREATE DATABASE " + name`,
		"var q = `WITH x AS (SELECT 1) SELECT * FROM x`",
	} {
		if got := found(src); len(got) != 1 {
			t.Errorf("%s: found %q, want one statement", src, got)
		}
	}
	for _, src := range []string{
		`var a = "Update the template."`,
		`func f(q Q) { q.For("UPDATE").Where("t.id = ?", 1).ModelTableExpr("? AS t", x) }`,
		`var a = "CONFLICT ON CONSTRAINT templates_name_language_key DO NOTHING"`,
		`var a = "SELECT a row"`,
	} {
		if got := found(src); len(got) != 0 {
			t.Errorf("%s: found %q, want none", src, got)
		}
	}
	pkgs := []pkgFiles{
		{Path: "platform/a", Files: []goFile{{Name: "platform/a/a.go", SQL: []string{"SELECT 1 FROM x"}}}},
		{Path: "platform/b", Files: []goFile{{Name: "platform/b/b.go"}}},
		{Path: "cmd/platform/bench", Files: []goFile{{Name: "cmd/platform/bench/b.go", SQL: []string{"SELECT 1 FROM x"}}}},
		{Path: "platform/dbtest", Files: []goFile{{Name: "platform/dbtest/d.go", SQL: []string{"SELECT 1 FROM x"}}}},
	}
	if v := sqlViolations(pkgs, []string{"platform/a"}); len(v) != 0 {
		t.Errorf("listed package: %q", v)
	}
	if v := sqlViolations(pkgs, nil); len(v) != 1 || !strings.Contains(v[0], "platform/a/a.go holds SQL") {
		t.Errorf("unlisted package: %q", v)
	}
	if v := sqlViolations(pkgs, []string{"platform/a", "platform/b"}); len(v) != 1 || !strings.Contains(v[0], "take it off") {
		t.Errorf("converted package still listed: %q", v)
	}
}
