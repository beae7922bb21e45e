package app

import (
	"context"
	"fmt"

	"github.com/bizmsg/platform/platform/db"
)

// purgeTenants runs purge on every tenant and sums the rows it deleted. A
// failing tenant does not stop the others: the error counts the tenants that
// failed and wraps the first failure.
func (a *App) purgeTenants(ctx context.Context, purge func(db.Tenant) (int64, error)) (int64, error) {
	tenants, err := a.Migrator.Tenants(ctx)
	if err != nil {
		return 0, err
	}
	var (
		total, failed int64
		firstErr      error
	)
	for _, t := range tenants {
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
