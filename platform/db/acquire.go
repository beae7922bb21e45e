package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrAcquireTimeout is the error of a statement that found no free pool
// connection within Config.AcquireTimeout; IsUnavailable reports it.
var ErrAcquireTimeout = errors.New("no database connection free")

// acquireBound is the pool's tracer, and the one place that bounds waiting
// for a pool connection: pgxpool calls it at the start and end of every
// Acquire, which every use of the pool goes through (its Query, Exec, Begin
// and SendBatch, Prepared, River), and runs the acquisition
// under the context TraceAcquireStart returns. That context ends after
// timeout unless the caller's own deadline comes first, so under pool
// exhaustion a request fails fast (503) instead of waiting for a
// connection as long as its client does (docs/api.md, §Status codes: a 503
// is answered fast, never after a hang). Only the wait is bounded: the
// statement then runs under the caller's context. pgxpool has no acquire
// timeout of its own.
//
// The acquisition ends with the context's error, context.DeadlineExceeded,
// which the HTTP layer answers with 503; Prepared, which acquires itself,
// names it ErrAcquireTimeout (acquireError).
//
// It is also the pool's statement tracer, which counts the tenant schemas
// each connection serves under Config.MaxConnTenants (tenantbound.go).
type acquireBound struct {
	timeout    time.Duration
	maxTenants int
}

// acquireCancel is the context key of the cancel function of the bound that
// TraceAcquireStart set, which TraceAcquireEnd calls.
type acquireCancel struct{}

var (
	_ pgxpool.AcquireTracer = acquireBound{}
	_ pgx.QueryTracer       = acquireBound{}
	_ pgx.BatchTracer       = acquireBound{}
)

// TraceAcquireStart bounds the acquisition by b.timeout, unless ctx ends
// sooner.
func (b acquireBound) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	if b.timeout <= 0 {
		return ctx
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= b.timeout {
		return ctx
	}
	bounded, cancel := context.WithTimeout(ctx, b.timeout)
	return context.WithValue(bounded, acquireCancel{}, cancel)
}

// TraceAcquireEnd releases the bound's timer.
func (acquireBound) TraceAcquireEnd(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireEndData) {
	if cancel, ok := ctx.Value(acquireCancel{}).(context.CancelFunc); ok {
		cancel()
	}
}

// acquireError is the error of a failed Pool.Acquire under the caller's
// ctx: ErrAcquireTimeout when the pool's bound (acquireBound), not ctx,
// ended the wait.
func acquireError(ctx context.Context, err error) error {
	if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", ErrAcquireTimeout, err)
	}
	return fmt.Errorf("acquire connection: %w", err)
}
