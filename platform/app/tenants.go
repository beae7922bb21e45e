package app

import (
	"context"
	"fmt"

	"github.com/bizmsg/platform/platform/db"
)

// sumTenants runs fn on every tenant and sums what it counted (the rows a
// purge deleted, say) (sumEach).
func (a *App) sumTenants(ctx context.Context, fn func(db.Tenant) (int64, error)) (int64, error) {
	tenants, err := a.Migrator.Tenants(ctx)
	if err != nil {
		return 0, err
	}
	return sumEach(ctx, tenants, fn)
}

// sumEach runs fn on each of tenants and sums what it counted. A
// failing tenant does not stop the others: the error counts the tenants
// that failed and wraps the first failure. An ended ctx (a shutdown
// cancelling the job) stops it before the next tenant: over thousands of
// tenants the rest would each fail at once and be counted as failures.
func sumEach(ctx context.Context, tenants []db.Tenant, fn func(db.Tenant) (int64, error)) (int64, error) {
	var (
		total, failed int64
		firstErr      error
	)
	for i, t := range tenants {
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("stopped after %d of %d tenant(s): %w", i, len(tenants), err)
		}
		n, err := fn(t)
		if err != nil {
			failed++
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		total += n
	}
	if firstErr != nil {
		return total, fmt.Errorf("%d of %d tenant(s) failed, first: %w", failed, len(tenants), firstErr)
	}
	return total, nil
}
