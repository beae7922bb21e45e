package dbtest

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Statements counts the statements run on a pool (a pgx.QueryTracer): each
// is one round trip once its text is prepared. Tests that hold a path to a
// number of round trips count with it.
type Statements struct{ n atomic.Int64 }

// TraceQueryStart counts one statement.
func (s *Statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	s.n.Add(1)
	return ctx
}

// TraceQueryEnd does nothing.
func (s *Statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Count returns how many statements ran since the pool opened or the last
// Reset.
func (s *Statements) Count() int64 { return s.n.Load() }

// Reset starts the count again from zero.
func (s *Statements) Reset() { s.n.Store(0) }

// CountedPool opens a pool on dbURL whose statements the returned
// Statements counts, closed when the test ends.
func CountedPool(t testing.TB, dbURL string) (*pgxpool.Pool, *Statements) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatalf("dbtest: parse url: %v", err)
	}
	count := new(Statements)
	cfg.ConnConfig.Tracer = count
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("dbtest: counted pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool, count
}
