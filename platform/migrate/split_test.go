package migrate

import (
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/bizmsg/platform/migrations"
)

func TestStatements(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sql  string
		want []string
	}{
		{"", nil},
		{"-- only a comment\n", nil},
		{"CREATE TABLE a (x int); CREATE INDEX i ON a (x);", []string{"CREATE TABLE a (x int)", "CREATE INDEX i ON a (x)"}},
		{"SELECT 'a;b'; SELECT \"c;d\"", []string{"SELECT 'a;b'", "SELECT \"c;d\""}},
		{"SELECT 'it''s;'; SELECT E'\\';'", []string{"SELECT 'it''s;'", "SELECT E'\\';'"}},
		{"-- a; comment\nSELECT 1; /* b; */ SELECT 2", []string{"-- a; comment\nSELECT 1", "/* b; */ SELECT 2"}},
		{"DO $m$ BEGIN EXECUTE format($f$ SELECT %1$I; $f$, 'x'); END $m$; SELECT $1", []string{
			"DO $m$ BEGIN EXECUTE format($f$ SELECT %1$I; $f$, 'x'); END $m$", "SELECT $1"}},
	} {
		if got := Statements(tc.sql); !slices.Equal(got, tc.want) {
			t.Errorf("Statements(%q) = %q, want %q", tc.sql, got, tc.want)
		}
	}
}

// Every embedded migration splits into statements that hold all of its text
// but the semicolons between them and the blanks around them.
func TestStatementsOfEveryMigration(t *testing.T) {
	t.Parallel()
	for name, fsys := range map[string]fs.FS{"central": migrations.Central(), "network": migrations.Network(),
		"river": migrations.River(), "tenant": migrations.Tenant()} {
		set, err := LoadSet(fsys)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range set {
			stmts := Statements(m.SQL)
			if len(stmts) == 0 {
				t.Errorf("%s %04d: no statement", name, m.Version)
			}
			squash := func(s string) string { return strings.Join(strings.Fields(strings.ReplaceAll(s, ";", " ")), " ") }
			if got, want := squash(strings.Join(stmts, " ")), squash(m.SQL); got != want {
				t.Errorf("%s %04d: the statements lose text", name, m.Version)
			}
		}
	}
}
