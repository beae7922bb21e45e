package migrate

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bizmsg/platform/platform/sqlq"
)

// querier is what the migrator's statements run on: a pool, a connection
// or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// exec runs statement name of qs (m.q or m.cq) on on, with schema (a
// quoted schema, "" for a statement that names none) and args
// (sqlq.Queries.Pgx).
func (m *Migrator) exec(ctx context.Context, on querier, qs *sqlq.Queries, name, schema string, args sqlq.Args) error {
	text, vals, err := qs.Pgx(name, schema, args)
	if err != nil {
		return err
	}
	_, err = on.Exec(ctx, text, vals...)
	return err
}

// query runs statement name of qs on on as exec does, for its rows.
func (m *Migrator) query(ctx context.Context, on querier, qs *sqlq.Queries, name, schema string, args sqlq.Args) (pgx.Rows, error) {
	text, vals, err := qs.Pgx(name, schema, args)
	if err != nil {
		return nil, err
	}
	return on.Query(ctx, text, vals...)
}

// queryRow runs statement name of qs on on as exec does, for its first
// row.
func (m *Migrator) queryRow(ctx context.Context, on querier, qs *sqlq.Queries, name, schema string, args sqlq.Args) pgx.Row {
	text, vals, err := qs.Pgx(name, schema, args)
	if err != nil {
		return errRow{err}
	}
	return on.QueryRow(ctx, text, vals...)
}

// errRow is the row of a statement that could not be written: its Scan
// returns why.
type errRow struct{ err error }

// Scan returns the row's error.
func (r errRow) Scan(...any) error { return r.err }
