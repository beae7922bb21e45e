package bench

import (
	"context"
	"fmt"

	"github.com/bizmsg/platform/platform/db"
)

// serverSettings are the Postgres settings that decide what many tenant
// schemas cost, as the benchmark found them (docs/performance.md, §Server
// settings).
type serverSettings struct {
	Version       string `json:"server_version"`
	VersionNum    int    `json:"server_version_num"`
	SharedBuffers string `json:"shared_buffers"`
	MaxFiles      int    `json:"max_files_per_process"`
	CommitMode    string `json:"synchronous_commit"`
	// Autovacuum is whether the server runs autovacuum: with it on, the
	// vacuums and analyzes of many tenants' small tables (and the catalog
	// invalidations they send every backend) share the machine.
	Autovacuum     string `json:"autovacuum"`
	TenantRelFiles int    `json:"tenant_relation_files"`
}

// readServerSettings reads the settings, and how many tables and indexes one
// tenant schema has: a backend keeps a descriptor open per relation file it
// touches (TOAST tables only matter for large values, so they are not
// counted).
func readServerSettings(ctx context.Context, d *db.DB, t db.Tenant) (serverSettings, error) {
	var s serverSettings
	err := d.Pool.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('server_version_num')::int,
	       current_setting('shared_buffers'),
	       current_setting('max_files_per_process')::int, current_setting('synchronous_commit'),
	       current_setting('autovacuum'),
	       (SELECT count(*) FROM pg_class WHERE relnamespace = $1::regnamespace AND relkind IN ('r', 'i'))`,
		t.Schema).Scan(&s.Version, &s.VersionNum, &s.SharedBuffers, &s.MaxFiles, &s.CommitMode, &s.Autovacuum, &s.TenantRelFiles)
	if err != nil {
		return s, fmt.Errorf("server settings: %w", err)
	}
	return s, nil
}

// warning explains, when there is something to say, why n tenants will cost
// more per request than one on this server: the service's own start-up
// advice (db.FileBudget) for n tenants.
func (s serverSettings) warning(n int) string {
	advice := db.FileBudget{MaxFilesPerProcess: s.MaxFiles, Tenants: n, RelationsPerTenant: s.TenantRelFiles}.Advice()
	if advice == "" {
		return ""
	}
	return "warning: " + advice
}

// checkpoints is how many checkpoints the server has started (timed and
// requested), from pg_stat_bgwriter (Postgres 16 and older) or
// pg_stat_checkpointer (17 and newer).
func (s serverSettings) checkpoints(ctx context.Context, d *db.DB) (int64, error) {
	query := `SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter`
	if s.VersionNum >= 170000 {
		query = `SELECT num_timed + num_requested FROM pg_stat_checkpointer`
	}
	var n int64
	if err := d.Pool.QueryRow(ctx, query).Scan(&n); err != nil {
		return 0, fmt.Errorf("count checkpoints: %w", err)
	}
	return n, nil
}
