package campaignrelease

import (
	"context"
	"embed"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/sqlq"
)

// The statements of a tick are the named queries of queries/, written
// for pgx by sqlq's Pgx (the tenant's quoted schema in the text, each
// other ?name a parameter) and run on the pool or the tick's pgx
// transaction as before: pgx keeps them prepared per connection.

//go:embed queries/*.sql
var queries embed.FS

// querier runs a statement on the pool or in a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// query runs named query name of tenant t with args on q.
func (s *Service) query(ctx context.Context, q querier, t db.Tenant, name string, args sqlq.Args) (pgx.Rows, error) {
	text, vals, err := s.q.Pgx(name, t.Quoted(), args)
	if err != nil {
		return nil, err
	}
	return q.Query(ctx, text, vals...)
}

// row runs named query name of tenant t with args on q for its one row.
func (s *Service) row(ctx context.Context, q querier, t db.Tenant, name string, args sqlq.Args) pgx.Row {
	text, vals, err := s.q.Pgx(name, t.Quoted(), args)
	if err != nil {
		return errRow{err}
	}
	return q.QueryRow(ctx, text, vals...)
}

// exec runs named query name of tenant t with args on q for its effect.
func (s *Service) exec(ctx context.Context, q querier, t db.Tenant, name string, args sqlq.Args) error {
	text, vals, err := s.q.Pgx(name, t.Quoted(), args)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, text, vals...)
	return err
}

// errRow is the row of a query that could not be written: its Scan
// returns why.
type errRow struct{ err error }

// Scan returns the row's error.
func (r errRow) Scan(...any) error { return r.err }
