package migrate

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/sqlq"
)

// exec runs statement name of qs (m.q or m.cq) on on, with schema (a
// quoted schema, "" for a statement that names none) and args
// (db.ExecNamed).
func (m *Migrator) exec(ctx context.Context, on db.Querier, qs *sqlq.Queries, name, schema string, args sqlq.Args) error {
	_, err := db.ExecNamed(ctx, on, qs, name, schema, args)
	return err
}

// query runs statement name of qs on on as exec does, for its rows.
func (m *Migrator) query(ctx context.Context, on db.Querier, qs *sqlq.Queries, name, schema string, args sqlq.Args) (pgx.Rows, error) {
	return db.QueryNamed(ctx, on, qs, name, schema, args)
}

// queryRow runs statement name of qs on on as exec does, for its first
// row.
func (m *Migrator) queryRow(ctx context.Context, on db.Querier, qs *sqlq.Queries, name, schema string, args sqlq.Args) pgx.Row {
	return db.QueryRowNamed(ctx, on, qs, name, schema, args)
}
