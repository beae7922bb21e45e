// Package db owns the connection to Postgres: one pgx pool shared by every
// statement of the platform and by River, bun over that pool (DB.Bun,
// RunInTx), database creation for first start, the classification of
// "database unavailable" errors, and the single mapping from an
// organization to its tenant schema.
package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/uptrace/bun"

	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/sqlq"
)

// Config configures the connection pool.
type Config struct {
	// URL is a postgres:// connection URL. Required.
	URL string
	// MaxConns caps the pool. Default 10: on a 2-core machine a small pool beats
	// a large one (see docs/design.md, §Tenant schemas are named in the SQL).
	MaxConns int32
	// ConnectTimeout bounds establishing one connection, so a database outage
	// answers fast instead of hanging. Default 3s.
	ConnectTimeout time.Duration
	// AcquireTimeout bounds every wait for a pooled connection when the
	// caller's context has no earlier deadline (acquireBound): the pool's
	// own methods, Prepared and River alike. Past it the wait fails with
	// context.DeadlineExceeded (ErrAcquireTimeout from Prepared), which the
	// HTTP layer answers with 503. Default 5s.
	AcquireTimeout time.Duration
	// ApplicationName is the connections' application_name, which
	// pg_stat_activity shows (an operator tells the api, worker and serve
	// processes' connections apart by it), unless the URL sets one.
	// Default "bizmsg".
	ApplicationName string
	// MaxConnTenants bounds a pool connection's Postgres backend memory:
	// a connection whose statements have named more tenant schemas than
	// this is closed when it is released, and a fresh one opened when one
	// is needed (tenantbound.go; docs/operations.md, §Memory). 0 takes the
	// default (1,000); a negative value sets no bound.
	MaxConnTenants int
}

func (c *Config) setDefaults() {
	defaults.Positive(&c.MaxConns, 10)
	defaults.Positive(&c.ConnectTimeout, 3*time.Second)
	defaults.Positive(&c.AcquireTimeout, 5*time.Second)
	if c.MaxConnTenants == 0 {
		c.MaxConnTenants = 1000
	}
	if c.ApplicationName == "" {
		c.ApplicationName = "bizmsg"
	}
}

// DB is the process's database handle: one pgx pool, which every statement
// of the platform and River use (docs/design.md, §One pool).
type DB struct {
	// Pool is the pgx pool.
	Pool *pgxpool.Pool
	// Bun is bun over the same pool (database/sql through pgx's stdlib
	// driver): bun models, bun's builder and named queries
	// (platform/sqlq), and RunInTx (docs/design.md, §The data layer).
	Bun *bun.DB
}

// Open connects to the database named by cfg.URL. It does not create the
// database; call EnsureDatabase first for that.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	cfg.setDefaults()
	pcfg, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	pcfg.MaxConns = cfg.MaxConns
	pcfg.ConnConfig.ConnectTimeout = cfg.ConnectTimeout
	pcfg.HealthCheckPeriod = 15 * time.Second
	pcfg.ConnConfig.Tracer = acquireBound{timeout: cfg.AcquireTimeout, maxTenants: cfg.MaxConnTenants}
	if cfg.MaxConnTenants > 0 {
		pcfg.AfterRelease = keepConn
	}
	if pcfg.ConnConfig.RuntimeParams["application_name"] == "" {
		pcfg.ConnConfig.RuntimeParams["application_name"] = cfg.ApplicationName
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("create pool: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout+time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to %s: %w", Redact(cfg.URL), err)
	}
	return FromPool(pool), nil
}

// FromPool is the DB of a pool opened elsewhere (a test's counting pool),
// with bun over it. Close closes the pool too.
func FromPool(pool *pgxpool.Pool) *DB { return &DB{Pool: pool, Bun: openBun(pool)} }

// Close closes bun's handle, then the pool.
func (d *DB) Close() {
	if d.Bun != nil {
		_ = d.Bun.Close() // releases nothing the pool does not own
	}
	d.Pool.Close()
}

// Ping checks that the database answers.
func (d *DB) Ping(ctx context.Context) error { return d.Pool.Ping(ctx) }

// ErrNoDatabase is CheckDatabase's error for a database that does not exist.
var ErrNoDatabase = errors.New("does not exist")

// CheckDatabase connects once to the database named in rawURL and reports
// whether it answers, creating nothing: an error wrapping ErrNoDatabase,
// naming the database and its server, when it does not exist.
func CheckDatabase(ctx context.Context, rawURL string) error {
	conn, err := connect(ctx, rawURL)
	if isUndefinedDatabase(err) {
		return fmt.Errorf("database %s %w", Redact(rawURL), ErrNoDatabase)
	}
	if err != nil {
		return fmt.Errorf("connect to %s: %w", Redact(rawURL), err)
	}
	return conn.Close(ctx)
}

// EnsureDatabase creates the database named in rawURL if it does not exist, by
// connecting to the server's `postgres` maintenance database. It is a no-op
// when the database already exists, and safe when several processes race.
func EnsureDatabase(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("parse database url: %w", err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" {
		return nil
	}
	// Try the target first: the common case needs no maintenance connection.
	if conn, err := connect(ctx, rawURL); err == nil {
		return conn.Close(ctx)
	} else if !isUndefinedDatabase(err) {
		return fmt.Errorf("connect to %s: %w", Redact(rawURL), err)
	}
	admin := *u
	admin.Path = "/postgres"
	conn, err := connect(ctx, admin.String())
	if err != nil {
		return fmt.Errorf("connect to maintenance database: %w", err)
	}
	defer conn.Close(ctx)
	q, err := sqlq.Load(queries, "queries")
	if err != nil {
		return fmt.Errorf("create database %q: %w", name, err)
	}
	text, _, err := q.Pgx("create_database", pgx.Identifier{name}.Sanitize(), nil)
	if err != nil {
		return fmt.Errorf("create database %q: %w", name, err)
	}
	_, err = conn.Exec(ctx, text)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42P04" || pgErr.Code == "23505") {
		return nil // created concurrently by another process
	}
	if err != nil {
		return fmt.Errorf("create database %q: %w", name, err)
	}
	return nil
}

func connect(ctx context.Context, rawURL string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 5 * time.Second
	}
	return pgx.ConnectConfig(ctx, cfg)
}

func isUndefinedDatabase(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "3D000"
}

// Redact returns the URL with any password replaced, safe to log.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparseable database url)"
	}
	return u.Redacted()
}

// IsDataError reports whether err is the database refusing a value (SQLSTATE
// class 22, data exception, such as a NUL in a text or a number out of a
// column's range; or 23, an integrity constraint violation) rather than
// failing. A statement over many rows that fails so is at fault for one of
// them, and worth trying again row by row.
func IsDataError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "23"))
}

// IsUnavailable reports whether err means the database could not be reached or
// went away (as opposed to a query that the database refused). The HTTP layer
// answers such errors with 503.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P01..57P03: admin shutdown, crash
		// shutdown, cannot connect now; 53300: too many connections.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" ||
			pgErr.Code == "57P02" || pgErr.Code == "57P03" || pgErr.Code == "53300" ||
			IsSchemaSwitch(err) || IsNodeLost(err)
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	if pgconn.SafeToRetry(err) || errors.Is(err, sql.ErrConnDone) || errors.Is(err, ErrAcquireTimeout) {
		return true
	}
	return strings.Contains(err.Error(), "closed pool") ||
		strings.Contains(err.Error(), "conn closed") ||
		strings.Contains(err.Error(), "unexpected EOF")
}

// citusSwitchMessage is the message of the error Citus 13.2 gives a
// statement that waited for a tenant schema's move (citus_schema_move) to
// switch the schema to its new node and then calls one of the schema's
// functions that reads its tables (opted_out): on the new node the
// function's query is refused as a nested distributed query.
const citusSwitchMessage = "cannot execute a distributed query from a query on a shard"

// IsSchemaSwitch reports whether err is Citus refusing a statement that
// straddled the end of a tenant schema's move (docs/scaling.md,
// §Rebalancing): the same statement run again succeeds, so IsUnavailable
// counts it (503, retried by clients and by River).
func IsSchemaSwitch(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "XX000" && pgErr.Message == citusSwitchMessage
}

// citusNodeLost are the beginnings of the messages of the errors Citus
// gives a statement or a commit whose connection to a worker node broke
// (the node crashed or stopped meanwhile): libpq's words for a lost
// connection, which Citus reports as XX000 when the node sent no error of
// its own, its failure of a transaction's connection to a node, and its
// check after a commit that every shard's placement committed (a
// placement's connection failed; the schema has no deferred constraint,
// the check's other cause). (Its failed copy of an intermediate result to
// the node is 58030, "failed to COPY to shard".)
var citusNodeLost = []string{
	"server closed the connection unexpectedly",
	"failure on connection marked as essential",
	"connection not open",
	"no connection to the server",
	"could not receive data from server",
	"could not commit transaction for shard",
}

// IsNodeLost reports whether err is Citus's report that its connection to
// a worker node broke during the statement or the commit (docs/scaling.md,
// §A worker node down): the node is down, or was; IsUnavailable counts it
// (503, retried by clients and by River), as it counts a connection to
// the node refused (08006). Like a single server lost during a commit, the
// transaction may have committed: a client's retry with its
// Idempotency-Key gets the first answer.
func IsNodeLost(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	if pgErr.Code == "58030" {
		// An intermediate result's copy to the node failed.
		return strings.HasPrefix(pgErr.Message, "failed to COPY to shard")
	}
	if pgErr.Code != "XX000" {
		return false
	}
	for _, m := range citusNodeLost {
		if strings.HasPrefix(pgErr.Message, m) {
			return true
		}
	}
	return false
}

// IsUniqueViolation reports whether err is a unique-constraint violation
// (optionally of the named constraint).
func IsUniqueViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		return false
	}
	return constraint == "" || pgErr.ConstraintName == constraint
}
