package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/migrate"
)

// provisionTenants provisions count organizations on d, each its row and its
// schema migrated by m (as provisioning does), at most concurrency at once,
// and returns each one's time. progress, when not nil, is told how many are
// done.
func provisionTenants(ctx context.Context, d *db.DB, m *migrate.Migrator, count, concurrency int, progress func(done int)) ([]time.Duration, error) {
	durations := make([]time.Duration, 0, count)
	var (
		mu   sync.Mutex
		done atomic.Int64
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrency)
	for i := range count {
		g.Go(func() error {
			t0 := time.Now()
			if err := provisionTenant(gctx, d, m, i); err != nil {
				return err
			}
			took := time.Since(t0)
			mu.Lock()
			durations = append(durations, took)
			mu.Unlock()
			if n := done.Add(1); progress != nil {
				progress(int(n))
			}
			return nil
		})
	}
	return durations, g.Wait()
}

// provisionTenant creates the i-th organization's row and migrates its schema.
func provisionTenant(ctx context.Context, d *db.DB, m *migrate.Migrator, i int) error {
	var id int64
	if err := d.Pool.QueryRow(ctx, "INSERT INTO central.organizations (name) VALUES ($1) RETURNING id", fmt.Sprintf("bench %d", i)).Scan(&id); err != nil {
		return fmt.Errorf("create organization: %w", err)
	}
	t := db.Tenant{OrgID: id, Schema: db.SchemaFor(id)}
	if _, err := d.Pool.Exec(ctx, "UPDATE central.organizations SET schema_name = $2 WHERE id = $1", id, t.Schema); err != nil {
		return fmt.Errorf("name schema: %w", err)
	}
	if _, err := m.Tenant(ctx, t); err != nil {
		return err
	}
	return nil
}
