package db

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bizmsg/platform/platform/sqlq"
)

// FileBudget is what Postgres lets a backend keep open against what the
// organizations' tenant schemas need. A backend keeps a descriptor open per
// table or index file it touches, up to max_files_per_process (default
// 1,000); past it, every statement closes and reopens files (about 14
// openat and 14 close per send statement over 1,000 tenants, measured), so
// a server that serves many tenants from each backend needs the setting
// above the tables and indexes of the tenants it serves
// (docs/performance.md, §Server settings).
type FileBudget struct {
	// MaxFilesPerProcess is the server's max_files_per_process.
	MaxFilesPerProcess int
	// Tenants is the number of tenant schemas.
	Tenants int
	// RelationsPerTenant is the tables and indexes of one tenant schema.
	RelationsPerTenant int
}

// Needed is how many files a backend that touches every tenant keeps open.
func (b FileBudget) Needed() int { return b.Tenants * b.RelationsPerTenant }

// Short reports whether a backend touching every tenant would exceed
// max_files_per_process.
func (b FileBudget) Short() bool { return b.Needed() > b.MaxFilesPerProcess }

// Advice says what to set when the budget is short, else "".
func (b FileBudget) Advice() string {
	if !b.Short() {
		return ""
	}
	return fmt.Sprintf("max_files_per_process is %d but the %d tenant schemas have about %d tables and indexes: "+
		"a database connection that serves many organizations reopens files on every statement; "+
		"set max_files_per_process to at least %d (and the server's open-files limit above it)",
		b.MaxFilesPerProcess, b.Tenants, b.Needed(), b.Needed())
}

//go:embed queries/*.sql
var queries embed.FS

// ReadFileBudget reads the budget: the setting, the number of tenant
// schemas (organizations with one) and the relations of one of them
// (queries/file_budget.sql). It runs once, at start-up, so it loads its
// query when it runs.
func ReadFileBudget(ctx context.Context, pool *pgxpool.Pool) (FileBudget, error) {
	q, err := sqlq.Load(queries, "queries")
	if err != nil {
		return FileBudget{}, fmt.Errorf("read the file budget: %w", err)
	}
	var b FileBudget
	if err := QueryRowNamed(ctx, pool, q, "file_budget", "", nil).Scan(&b.MaxFilesPerProcess, &b.Tenants, &b.RelationsPerTenant); err != nil {
		return FileBudget{}, fmt.Errorf("read the file budget: %w", err)
	}
	return b, nil
}
