package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// openSQL returns database/sql over pool for bun and River's database/sql
// driver, with one change to pgx's defaults: a query without arguments runs
// in one round trip with the simple protocol instead of being prepared.
//
// bun formats its arguments into the SQL text, so its queries reach the
// driver with no arguments and a text that differs with every value (and
// every tenant schema). pgx's default mode (QueryExecModeCacheStatement)
// would prepare each such text as a named statement (a round trip of its
// own before the execution), keep it in the connection's statement cache,
// and evict and deallocate another one: two round trips per query and a
// cache that never hits. Queries with arguments (River's inserts, pgx-style
// $n placeholders) have stable texts and keep the statement cache. Only
// queries need this: pgx's Exec already uses the simple protocol when there
// are no arguments. The benchmark that found this is in docs/performance.md,
// §Simple protocol for bun queries.
//
// database/sql keeps no idle connections of its own, so each of its queries
// (or transactions) takes a pgxpool connection in Connect, which waits at
// most Config.AcquireTimeout (acquireBound) and names it ErrAcquireTimeout.
func openSQL(pool *pgxpool.Pool) *sql.DB {
	s := sql.OpenDB(simpleConnector{stdlib.GetPoolConnector(pool)})
	s.SetMaxIdleConns(0) // connections are pooled by pgxpool (see stdlib.OpenDBFromPool)
	return s
}

type simpleConnector struct{ driver.Connector }

func (c simpleConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, acquireError(ctx, err)
	}
	sc, ok := conn.(*stdlib.Conn)
	if !ok {
		_ = conn.Close()
		return nil, errors.New("db: the pgx stdlib connector returned an unexpected connection type")
	}
	return simpleConn{sc}, nil
}

// simpleConn is a pgx stdlib connection whose argument-less queries use the
// simple protocol.
type simpleConn struct{ *stdlib.Conn }

var simpleMode = []driver.NamedValue{{Ordinal: 1, Value: pgx.QueryExecModeSimpleProtocol}}

func (c simpleConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if len(args) == 0 {
		args = simpleMode
	}
	return c.Conn.QueryContext(ctx, query, args)
}
