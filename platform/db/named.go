package db

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bizmsg/platform/platform/sqlq"
)

// Querier runs pgx statements: what a pool, a connection and a
// transaction offer.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// QueryNamed runs named query name of qs on on for its rows: written for
// pgx (sqlq.Queries.Pgx) with schema, a quoted schema or "" for a
// statement that names none, and args. pgx keeps the statement prepared
// per connection. It is the way to run a named query outside Prepared
// (whose Named does the same for its transactions).
func QueryNamed(ctx context.Context, on Querier, qs *sqlq.Queries, name, schema string, args sqlq.Args) (pgx.Rows, error) {
	text, vals, err := qs.Pgx(name, schema, args)
	if err != nil {
		return nil, err
	}
	return on.Query(ctx, text, vals...)
}

// QueryRowNamed runs named query name as QueryNamed does, for its first
// row; a query that cannot be written returns a row whose Scan says why.
func QueryRowNamed(ctx context.Context, on Querier, qs *sqlq.Queries, name, schema string, args sqlq.Args) pgx.Row {
	text, vals, err := qs.Pgx(name, schema, args)
	if err != nil {
		return errRow{err}
	}
	return on.QueryRow(ctx, text, vals...)
}

// ExecNamed runs named query name as QueryNamed does, for its effect.
func ExecNamed(ctx context.Context, on Querier, qs *sqlq.Queries, name, schema string, args sqlq.Args) (pgconn.CommandTag, error) {
	text, vals, err := qs.Pgx(name, schema, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	return on.Exec(ctx, text, vals...)
}
