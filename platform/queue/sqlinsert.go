package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/rivertype"

	"github.com/bizmsg/platform/platform/migrate"
)

// SQLInserter inserts jobs inside a database/sql transaction: the one
// under a bun transaction (db.Tx.SQL), so a row written through bun and
// its job commit or roll back together. NewSQLInserter's client is one.
type SQLInserter interface {
	InsertTx(ctx context.Context, tx *sql.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
}

// NewSQLInserter returns an insert-only River client on sqldb (db.DB's
// Bun.DB, the pool's connections through database/sql) with River's
// riverdatabasesql driver, the pairing River documents for bun. It works
// no jobs: the workers stay on riverpgxv5 (NewClient).
func NewSQLInserter(sqldb *sql.DB, logger *slog.Logger) (*river.Client[*sql.Tx], error) {
	if sqldb == nil {
		return nil, errors.New("queue: NewSQLInserter needs a database")
	}
	if logger == nil {
		logger = slog.Default()
	}
	c, err := river.NewClient(riverdatabasesql.New(sqldb), &river.Config{
		Schema: migrate.RiverSchema,
		Logger: logger.With("component", "river"),
	})
	if err != nil {
		return nil, fmt.Errorf("river client on database/sql: %w", err)
	}
	return c, nil
}
