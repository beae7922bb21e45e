// Package migrate is the platform's one migration runner. It applies the embedded
// SQL sets of package migrations to the central, network and tenant schemas, and
// River's own migrations to the river schema followed by the platform's set for
// it.
//
// Each schema has its own version table (<schema>.schema_migrations). A schema is
// migrated in one transaction that first takes a transaction-scoped advisory lock
// keyed by the schema name, so any number of processes starting at once apply
// each migration exactly once; the losers wait, then find nothing to do. Tenant
// schemas are migrated one per transaction: a single transaction across thousands
// of schemas would exhaust max_locks_per_transaction.
package migrate

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/bizmsg/platform/migrations"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/sqlq"
)

// queries are the migrator's own statements (platform/sqlq), pgx
// statements written by sqlq.Queries.Pgx (?schema the quoted schema it
// migrates): queries/ those of every database, two of them DDL (the
// schema and its version table), which Postgres parses but does not plan
// when they are prepared; queries/citus/ those that name Citus's functions
// and catalogs, which exist on a Citus coordinator only (integration's
// TestCitusCluster prepares them there).
//
//go:embed queries/*.sql queries/citus/*.sql queries/citus/fragments/*.sql
var queries embed.FS

// Schema names owned by the platform besides the tenant schemas.
const (
	CentralSchema = "central"
	NetworkSchema = "network"
	RiverSchema   = "river"
)

// Migration is one SQL file of a set.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Set is an ordered list of migrations for one kind of schema.
type Set []Migration

// Latest is the highest version in the set (0 for an empty set).
func (s Set) Latest() int {
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1].Version
}

// LoadSet reads NNNN_name.sql files from fsys, ordered by version. Versions must
// be unique and positive.
func LoadSet(fsys fs.FS) (Set, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var set Set
	seen := map[int]string{}
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".sql" {
			continue
		}
		num, rest, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %q: name must be NNNN_description.sql", e.Name())
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %q and %q share version %d", prev, e.Name(), v)
		}
		seen[v] = e.Name()
		body, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("read migration %q: %w", e.Name(), err)
		}
		set = append(set, Migration{Version: v, Name: strings.TrimSuffix(rest, ".sql"), SQL: string(body)})
	}
	sort.Slice(set, func(i, j int) bool { return set[i].Version < set[j].Version })
	return set, nil
}

// Config configures a Migrator.
type Config struct {
	// Pool is the database's pool. Required.
	Pool *pgxpool.Pool
	// Concurrency bounds how many tenant schemas are migrated at once. Default 4.
	Concurrency int
	// Logger receives progress and failures. Default: slog.Default().
	Logger *slog.Logger
	// Tenant is the tenant schemas' migration set (NNNN_description.sql
	// files). Nil: the platform's own, migrations.Tenant(). platform bench
	// tenants adds one of its own to time a migration of every schema.
	Tenant fs.FS
}

// Migrator applies migrations through a pgx pool.
type Migrator struct {
	pool    *pgxpool.Pool
	cfg     Config
	central Set
	network Set
	tenant  Set
	// riverSet is the platform's own set for the river schema, applied
	// after River's migrations (run by the river migrator below).
	riverSet Set
	river    *rivermigrate.Migrator[pgx.Tx]
	// citusState caches whether the database is a Citus coordinator
	// (citus.go).
	citusState citusState
	// q are the statements of queries/, cq those of queries/citus/.
	q, cq *sqlq.Queries
}

// New checks cfg and returns a Migrator over its pool with the embedded
// migration sets.
func New(cfg Config) (*Migrator, error) {
	if cfg.Pool == nil {
		return nil, errors.New("migrate: Config.Pool is required")
	}
	pool := cfg.Pool
	defaults.Positive(&cfg.Concurrency, 4)
	defaults.Logger(&cfg.Logger)
	m := &Migrator{pool: pool, cfg: cfg}
	var err error
	if m.q, err = sqlq.Load(queries, "queries"); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	if m.cq, err = sqlq.Load(queries, "queries/citus"); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	if m.central, err = LoadSet(migrations.Central()); err != nil {
		return nil, fmt.Errorf("central: %w", err)
	}
	if m.network, err = LoadSet(migrations.Network()); err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	tenant := cfg.Tenant
	if tenant == nil {
		tenant = migrations.Tenant()
	}
	if m.tenant, err = LoadSet(tenant); err != nil {
		return nil, fmt.Errorf("tenant: %w", err)
	}
	if m.riverSet, err = LoadSet(migrations.River()); err != nil {
		return nil, fmt.Errorf("river: %w", err)
	}
	m.river, err = rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{
		Schema: RiverSchema,
		Logger: cfg.Logger.With("component", "rivermigrate"),
	})
	if err != nil {
		return nil, fmt.Errorf("river migrator: %w", err)
	}
	return m, nil
}

// TenantSet returns the tenant migrations (used by tests and readiness).
func (m *Migrator) TenantSet() Set { return m.tenant }

// Base migrates the central, network and river schemas (River's migrations,
// then the platform's set for that schema). It is what a process runs at
// start; it returns quickly when everything is current.
func (m *Migrator) Base(ctx context.Context) (applied int, err error) {
	n, err := m.applySet(ctx, CentralSchema, m.central)
	if err != nil {
		return applied, fmt.Errorf("migrate %s: %w", CentralSchema, err)
	}
	applied += n
	if n, err = m.applySet(ctx, NetworkSchema, m.network); err != nil {
		return applied, fmt.Errorf("migrate %s: %w", NetworkSchema, err)
	}
	applied += n
	if n, err = m.migrateRiver(ctx); err != nil {
		return applied, fmt.Errorf("migrate %s: %w", RiverSchema, err)
	}
	applied += n
	if n, err = m.applySet(ctx, RiverSchema, m.riverSet); err != nil {
		return applied, fmt.Errorf("migrate %s (platform set): %w", RiverSchema, err)
	}
	return applied + n, nil
}

// Tenant creates (if needed) and migrates one tenant schema in one transaction.
// This is how an organization's schema is provisioned.
func (m *Migrator) Tenant(ctx context.Context, t db.Tenant) (applied int, err error) {
	n, err := m.applySet(ctx, t.Schema, m.tenant)
	if err != nil {
		return 0, fmt.Errorf("migrate %s: %w", t.Schema, err)
	}
	return n, nil
}

// TenantTx provisions a tenant schema inside the caller's transaction, so that
// creating an organization and its schema commit or roll back together.
func (m *Migrator) TenantTx(ctx context.Context, tx pgx.Tx, t db.Tenant) (applied int, err error) {
	citus, err := m.citusVia(ctx, tx)
	if err != nil {
		return 0, err
	}
	n, err := m.applySetTx(ctx, tx, t.Schema, m.tenant, true, citus)
	if err != nil {
		return 0, fmt.Errorf("migrate %s: %w", t.Schema, err)
	}
	return n, nil
}

func (m *Migrator) applySet(ctx context.Context, schema string, set Set) (int, error) {
	// Fast path without a lock: most starts find the schema current.
	if v, err := m.version(ctx, schema); err == nil && v >= set.Latest() {
		return 0, nil
	}
	// The lock is taken on the session before the migration transaction begins:
	// a transaction that waited for an advisory lock may still hold stale catalog
	// caches (advisory locks do not process invalidations), so CREATE SCHEMA IF
	// NOT EXISTS could miss a schema the other process just committed.
	citus, err := m.Citus(ctx)
	if err != nil {
		return 0, err
	}
	var applied int
	err = m.withLock(ctx, schema, func(conn *pgxpool.Conn) error {
		return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			var err error
			applied, err = m.applySetTx(ctx, tx, schema, set, false, citus)
			return err
		})
	})
	return applied, err
}

// withLock runs f on a connection that holds schema's advisory lock for
// its session, so that concurrent starts migrate schema one at a time.
func (m *Migrator) withLock(ctx context.Context, schema string, f func(*pgxpool.Conn) error) error {
	conn, err := m.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	defer conn.Release()
	if err := m.exec(ctx, conn, m.q, "lock", "", sqlq.Args{"key": lockKey(schema)}); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	defer func() {
		// Unlock on a fresh context: the caller's may be cancelled by now.
		_ = m.exec(context.WithoutCancel(ctx), conn, m.q, "unlock", "", sqlq.Args{"key": lockKey(schema)})
	}()
	return f(conn)
}

// applySetTx applies the pending migrations of set to schema inside tx. With
// xactLock it first takes the schema's advisory lock for the transaction (used
// when the caller owns the transaction and the schema is new to it). On Citus
// (citus) every schema is created a regular one and migrated one statement at
// a time, and a tenant schema is then distributed in the same transaction
// (citus.go).
func (m *Migrator) applySetTx(ctx context.Context, tx pgx.Tx, schema string, set Set, xactLock, citus bool) (int, error) {
	q := pgx.Identifier{schema}.Sanitize()
	if xactLock {
		if err := m.exec(ctx, tx, m.q, "xact_lock", "", sqlq.Args{"key": lockKey(schema)}); err != nil {
			return 0, fmt.Errorf("lock: %w", err)
		}
	}
	if err := m.localSchemas(ctx, tx, citus); err != nil {
		return 0, err
	}
	if err := m.exec(ctx, tx, m.q, "create_schema", q, nil); err != nil {
		return 0, fmt.Errorf("create schema: %w", err)
	}
	if err := m.exec(ctx, tx, m.q, "create_version_table", q, nil); err != nil {
		return 0, fmt.Errorf("create version table: %w", err)
	}
	var current int
	if err := m.queryRow(ctx, tx, m.q, "version", q, nil).Scan(&current); err != nil {
		return 0, fmt.Errorf("read version: %w", err)
	}
	applied := 0
	for _, mig := range set {
		if mig.Version <= current {
			continue
		}
		// Migration files use unqualified names; scope them to this schema for
		// this transaction only (SET LOCAL never leaks to the pooled session).
		if err := m.exec(ctx, tx, m.q, "search_path", "", sqlq.Args{"path": q}); err != nil {
			return applied, fmt.Errorf("set search_path: %w", err)
		}
		stmts := []string{mig.SQL}
		if citus {
			stmts = Statements(mig.SQL) // one at a time on Citus (split.go)
		}
		for _, stmt := range stmts {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return applied, fmt.Errorf("apply %04d_%s: %w", mig.Version, mig.Name, err)
			}
		}
		if err := m.exec(ctx, tx, m.q, "record", q, sqlq.Args{"version": mig.Version, "name": mig.Name}); err != nil {
			return applied, fmt.Errorf("record %04d_%s: %w", mig.Version, mig.Name, err)
		}
		applied++
	}
	if citus && schema != CentralSchema && schema != NetworkSchema && schema != RiverSchema {
		if err := m.distributeTx(ctx, tx, schema); err != nil {
			return applied, err
		}
	}
	return applied, nil
}

func lockKey(schema string) string { return "bizmsg.migrate." + schema }

// version returns the schema's applied version; 0 when the schema or its version
// table does not exist yet.
func (m *Migrator) version(ctx context.Context, schema string) (int, error) {
	var v int
	err := m.queryRow(ctx, m.pool, m.q, "version", pgx.Identifier{schema}.Sanitize(), nil).Scan(&v)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000") {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read %s version: %w", schema, err)
	}
	return v, nil
}

// migrateRiver runs River's migrator under a session advisory lock, so that
// concurrent starts run it one at a time.
func (m *Migrator) migrateRiver(ctx context.Context) (int, error) {
	if current, err := m.riverCurrent(ctx); err == nil && current {
		return 0, nil
	}
	citus, err := m.Citus(ctx)
	if err != nil {
		return 0, err
	}
	var applied int
	err = m.withLock(ctx, RiverSchema, func(conn *pgxpool.Conn) error {
		// River's schema is a regular coordinator schema on Citus.
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if err := m.localSchemas(ctx, tx, citus); err != nil {
				return err
			}
			return m.exec(ctx, tx, m.q, "create_schema", pgx.Identifier{RiverSchema}.Sanitize(), nil)
		}); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
		res, err := m.river.Migrate(ctx, rivermigrate.DirectionUp, nil)
		if err != nil {
			return err
		}
		applied = len(res.Versions)
		return nil
	})
	return applied, err
}

func (m *Migrator) riverCurrent(ctx context.Context) (bool, error) {
	existing, err := m.river.ExistingVersions(ctx)
	if err != nil {
		return false, err
	}
	all := m.river.AllVersions()
	return len(all) > 0 && len(existing) > 0 && existing[len(existing)-1].Version >= all[len(all)-1].Version, nil
}

// Current reports whether the central, network and river schemas are at the
// versions this binary knows (used by /readyz).
func (m *Migrator) Current(ctx context.Context) (bool, error) {
	for _, s := range []struct {
		schema string
		set    Set
	}{{CentralSchema, m.central}, {NetworkSchema, m.network}, {RiverSchema, m.riverSet}} {
		v, err := m.version(ctx, s.schema)
		if err != nil {
			return false, err
		}
		if v < s.set.Latest() {
			return false, nil
		}
	}
	return m.riverCurrent(ctx)
}
