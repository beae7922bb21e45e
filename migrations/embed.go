// Package migrations holds the embedded SQL migrations of every schema the
// platform owns. Each directory is one migration set; files are named
// NNNN_description.sql and applied in numeric order, each once, by the runner in
// platform/migrate. Files are written with unqualified table names: the runner
// sets the transaction's search_path to the target schema while applying them.
package migrations

import (
	"embed"
	"io/fs"
)

//go:embed central/*.sql network/*.sql river/*.sql tenant/*.sql
var files embed.FS

// Central returns the migrations of the `central` schema (organizations, users,
// API keys, refresh tokens).
func Central() fs.FS { return sub("central") }

// Network returns the migrations of the `network` schema (the built-in
// messaging network).
func Network() fs.FS { return sub("network") }

// River returns the platform's own migrations of the `river` schema, applied
// after River's (settings of River's tables that River leaves at Postgres's
// defaults; their version table is river.schema_migrations, beside River's
// river_migration).
func River() fs.FS { return sub("river") }

// Tenant returns the migrations applied to every `tenant_<id>` schema.
func Tenant() fs.FS { return sub("tenant") }

func sub(dir string) fs.FS {
	f, err := fs.Sub(files, dir)
	if err != nil {
		// fs.Sub fails only for invalid paths; these are constants checked by tests.
		panic(err)
	}
	return f
}
