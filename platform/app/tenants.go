package app

import (
	"context"
	"fmt"

	"github.com/bizmsg/platform/platform/db"
)

// purgeTenants runs purge on every tenant and sums the rows it deleted
// (purgeEach).
func (a *App) purgeTenants(ctx context.Context, purge func(db.Tenant) (int64, error)) (int64, error) {
	tenants, err := a.Migrator.Tenants(ctx)
	if err != nil {
		return 0, err
	}
	return purgeEach(ctx, tenants, purge)
}

// purgeEach runs purge on each of tenants and sums the rows it deleted. A
// failing tenant does not stop the others: the error counts the tenants
// that failed and wraps the first failure. An ended ctx (a shutdown
// cancelling the job) stops it before the next tenant: over thousands of
// tenants the rest would each fail at once and be counted as failures.
func purgeEach(ctx context.Context, tenants []db.Tenant, purge func(db.Tenant) (int64, error)) (int64, error) {
	var (
		total, failed int64
		firstErr      error
	)
	for i, t := range tenants {
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("stopped after %d of %d tenant(s): %w", i, len(tenants), err)
		}
		n, err := purge(t)
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
