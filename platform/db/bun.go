package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/schema"
)

// openBun returns bun over pool, through database/sql on pgx's stdlib
// driver: its connections are the pool's (acquired per statement or
// transaction, none kept idle by database/sql), so bun, pgx and River
// share one pool and its acquire bound (docs/design.md, §The data layer).
func openBun(pool *pgxpool.Pool) *bun.DB {
	sqldb := sql.OpenDB(simpleConnector{stdlib.GetPoolConnector(pool)})
	sqldb.SetMaxIdleConns(0) // the pool keeps the idle connections
	return bun.NewDB(sqldb, pgdialect.New())
}

// simpleConnector hands out stdlib connections that run a query without
// arguments on the simple protocol. bun writes its arguments into the text
// as literals, so each of its statements has a text of its own: the
// extended protocol would prepare every one (a round trip more) and push
// the hot paths' statements out of pgx's per-connection cache. A statement
// with arguments runs as pgx would run it.
type simpleConnector struct{ driver.Connector }

// Connect wraps the stdlib connection.
func (c simpleConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc, ok := conn.(*stdlib.Conn)
	if !ok {
		return nil, fmt.Errorf("db: unexpected database/sql connection %T", conn)
	}
	return simpleConn{sc}, nil
}

type simpleConn struct{ *stdlib.Conn }

// QueryContext runs query on the simple protocol when it has no arguments.
func (c simpleConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if len(args) == 0 {
		args = []driver.NamedValue{{Ordinal: 1, Value: pgx.QueryExecModeSimpleProtocol}}
	}
	return c.Conn.QueryContext(ctx, query, args)
}

// Tx is one transaction seen two ways: Bun for bun's models, builder and
// named queries, and Pgx for what still takes a pgx.Tx (audit.Record,
// webhooks' Emit, the tenant migrator, the job outbox). SQL is the
// database/sql transaction under Bun.
type Tx struct {
	// Bun is the transaction for bun.
	Bun bun.Tx
	pgx *hookedTx
}

// Pgx returns the transaction as a pgx.Tx on the same connection. It
// commits and rolls back with the bun transaction (its own Commit and
// Rollback refuse), takes db.AfterCommit functions, and opens no
// savepoints.
func (tx Tx) Pgx() pgx.Tx { return tx.pgx }

// SQL returns the database/sql transaction under Bun.
func (tx Tx) SQL() *sql.Tx { return tx.Bun.Tx }

// RunInTx runs fn in a transaction on one connection of the pool and
// commits it when fn returns nil (rolls it back otherwise, and on a panic);
// after the commit it runs the functions registered with AfterCommit on
// tx.Pgx(), as BeginFunc does.
func (d *DB) RunInTx(ctx context.Context, fn func(tx Tx) error) error {
	conn, err := d.Bun.Conn(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", acquireError(ctx, err))
	}
	defer func() { _ = conn.Close() }()
	btx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = btx.Rollback() }() // after Commit, sql.ErrTxDone
	var pc *pgx.Conn
	if err := conn.Raw(func(dc any) error {
		c, ok := dc.(simpleConn)
		if !ok {
			return fmt.Errorf("db: unexpected database/sql connection %T", dc)
		}
		pc = c.Conn.Conn()
		return nil
	}); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	h := &hookedTx{Tx: sharedTx{conn: pc}}
	if err := fn(Tx{Bun: btx, pgx: h}); err != nil {
		return err
	}
	if err := btx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	for _, f := range h.after {
		f()
	}
	return nil
}

// errSharedTx is the answer of a bun transaction's pgx view to what only
// the bun transaction may do.
var errSharedTx = errors.New("db: the pgx view of a bun transaction neither ends it nor opens savepoints")

// sharedTx is the pgx view of a transaction that database/sql began on
// conn: statements run on conn, inside it. The connection stays the
// transaction's until RunInTx ends it, so no one else uses conn meanwhile.
type sharedTx struct{ conn *pgx.Conn }

func (t sharedTx) Begin(context.Context) (pgx.Tx, error) { return nil, errSharedTx }
func (t sharedTx) Commit(context.Context) error          { return errSharedTx }
func (t sharedTx) Rollback(context.Context) error        { return errSharedTx }

func (t sharedTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	return t.conn.CopyFrom(ctx, table, cols, src)
}

func (t sharedTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.conn.SendBatch(ctx, b)
}

// LargeObjects is not offered on the view: its zero value.
func (t sharedTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

func (t sharedTx) Prepare(ctx context.Context, name, query string) (*pgconn.StatementDescription, error) {
	return t.conn.Prepare(ctx, name, query)
}

func (t sharedTx) Exec(ctx context.Context, query string, args ...any) (pgconn.CommandTag, error) {
	return t.conn.Exec(ctx, query, args...)
}

func (t sharedTx) Query(ctx context.Context, query string, args ...any) (pgx.Rows, error) {
	return t.conn.Query(ctx, query, args...)
}

func (t sharedTx) QueryRow(ctx context.Context, query string, args ...any) pgx.Row {
	return t.conn.QueryRow(ctx, query, args...)
}

func (t sharedTx) Conn() *pgx.Conn { return t.conn }

// TableAs is a tenant table for a bun model's ModelTableExpr, under the
// model's alias: ModelTableExpr(t.TableAs("templates", "t")) names
// `"tenant_42"."templates" AS "t"`. The model's tag gives the table's name
// and alias; the tenant gives its schema.
func (t Tenant) TableAs(table, alias string) (string, bun.Ident, bun.Ident) {
	return "? AS ?", t.Ident(table), bun.Ident(alias)
}

// Ident is a tenant's table for bun, `"tenant_42"."templates"` (TableAs
// for a model). It and SchemaIdent are the one way bun names a tenant's
// tables; the schema comes from the Tenant, never from input.
func (t Tenant) Ident(table string) bun.Ident { return bun.Ident(t.Schema + "." + table) }

// SchemaIdent is the tenant's schema for bun, `"tenant_42"`: a named
// query's ?schema argument.
func (t Tenant) SchemaIdent() bun.Ident { return bun.Ident(t.Schema) }

// QueryPgx runs bun's statement q in tx, the pgx transaction of a package
// not on bun yet, and returns its row for pgx to scan: the way a bun
// package's statement joins such a transaction while those packages
// remain (docs/design.md, §The data layer). The text carries its
// arguments as literals, so it runs on the simple protocol.
func (d *DB) QueryPgx(ctx context.Context, tx pgx.Tx, q schema.QueryAppender) pgx.Row {
	text, err := q.AppendQuery(d.Bun.QueryGen(), nil)
	if err != nil {
		return errRow{fmt.Errorf("db: format statement: %w", err)}
	}
	return tx.QueryRow(ctx, string(text), pgx.QueryExecModeSimpleProtocol)
}

// errRow is the row of a statement that could not be written: its Scan
// returns why.
type errRow struct{ err error }

// Scan returns the row's error.
func (r errRow) Scan(...any) error { return r.err }
