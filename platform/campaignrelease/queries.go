package campaignrelease

import (
	"context"
	"embed"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/sqlq"
)

// The statements of a tick are the named queries of queries/, written
// for pgx by sqlq's Pgx (the tenant's quoted schema in the text, each
// other ?name a parameter) and run on the pool or the tick's pgx
// transaction (db.QueryNamed): pgx keeps them prepared per connection.

//go:embed queries/*.sql
var queries embed.FS

// query runs named query name of tenant t with args on q.
func (s *Service) query(ctx context.Context, q db.Querier, t db.Tenant, name string, args sqlq.Args) (pgx.Rows, error) {
	return db.QueryNamed(ctx, q, s.q, name, t.Quoted(), args)
}

// row runs named query name of tenant t with args on q for its one row.
func (s *Service) row(ctx context.Context, q db.Querier, t db.Tenant, name string, args sqlq.Args) pgx.Row {
	return db.QueryRowNamed(ctx, q, s.q, name, t.Quoted(), args)
}

// exec runs named query name of tenant t with args on q for its effect.
func (s *Service) exec(ctx context.Context, q db.Querier, t db.Tenant, name string, args sqlq.Args) error {
	_, err := db.ExecNamed(ctx, q, s.q, name, t.Quoted(), args)
	return err
}
