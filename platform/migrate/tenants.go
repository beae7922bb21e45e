package migrate

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/bizmsg/platform/platform/db"
)

// TenantFailure is one tenant schema that could not be migrated.
type TenantFailure struct {
	Schema string
	Err    error
}

// Summary reports a run over every tenant schema.
type Summary struct {
	Total    int
	Updated  int
	Current  int
	Failed   []TenantFailure
	Duration time.Duration
}

// String is the one-line summary printed when no terminal is attached.
func (s Summary) String() string {
	return fmt.Sprintf("tenant schemas: %d total, %d migrated, %d already current, %d failed in %s",
		s.Total, s.Updated, s.Current, len(s.Failed), s.Duration.Round(time.Millisecond))
}

// Err returns an error naming every failed tenant, or nil.
func (s Summary) Err() error {
	if len(s.Failed) == 0 {
		return nil
	}
	parts := make([]string, 0, len(s.Failed))
	for _, f := range s.Failed {
		parts = append(parts, fmt.Sprintf("%s: %v", f.Schema, f.Err))
	}
	return fmt.Errorf("%d tenant schema(s) failed to migrate: %s", len(s.Failed), strings.Join(parts, "; "))
}

// Progress receives (done, total) after each tenant; nil disables reporting.
// It is called from one goroutine at a time.
type Progress func(done, total int)

// Tenants lists every organization's tenant from the central schema.
func (m *Migrator) Tenants(ctx context.Context) ([]db.Tenant, error) {
	rows, err := m.query(ctx, m.pool, m.q, "tenants", "", nil)
	if err != nil {
		return nil, fmt.Errorf("list organizations: %w", err)
	}
	defer rows.Close()
	var out []db.Tenant
	for rows.Next() {
		var id int64
		var schema string
		if err := rows.Scan(&id, &schema); err != nil {
			return nil, fmt.Errorf("scan organization: %w", err)
		}
		t, err := db.NewTenant(id, schema)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// AllTenants migrates every tenant schema with bounded concurrency. One failing
// tenant is recorded in the summary and does not stop the others; the returned
// error is only for failures to start (listing tenants) or cancellation.
func (m *Migrator) AllTenants(ctx context.Context, progress Progress) (Summary, error) {
	start := time.Now()
	tenants, err := m.Tenants(ctx)
	if err != nil {
		return Summary{}, err
	}
	sum := Summary{Total: len(tenants)}
	var (
		mu      sync.Mutex
		done    int
		wg      sync.WaitGroup
		next    = make(chan db.Tenant)
		latest  = m.tenant.Latest()
		workers = min(m.cfg.Concurrency, max(len(tenants), 1))
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range next {
				updated, err := m.tenantIfBehind(ctx, t, latest)
				mu.Lock()
				switch {
				case err != nil:
					sum.Failed = append(sum.Failed, TenantFailure{Schema: t.Schema, Err: err})
					m.cfg.Logger.Error("tenant migration failed", "schema", t.Schema, "error", err)
				case updated:
					sum.Updated++
				default:
					sum.Current++
				}
				done++
				if progress != nil {
					progress(done, len(tenants))
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, t := range tenants {
		select {
		case next <- t:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	sum.Duration = time.Since(start)
	if err := ctx.Err(); err != nil {
		return sum, fmt.Errorf("migrate tenants: %w", err)
	}
	return sum, nil
}

func (m *Migrator) tenantIfBehind(ctx context.Context, t db.Tenant, latest int) (bool, error) {
	v, err := m.version(ctx, t.Schema)
	if err != nil {
		return false, err
	}
	if v >= latest {
		return false, nil
	}
	n, err := m.Tenant(ctx, t)
	return n > 0, err
}

// ProgressBar returns a Progress that redraws a one-line bar on w (a terminal).
func ProgressBar(w io.Writer) Progress {
	return func(done, total int) {
		const width = 30
		filled := width
		if total > 0 {
			filled = done * width / total
		}
		fmt.Fprintf(w, "\r[%s%s] %d/%d tenant schemas", strings.Repeat("=", filled), strings.Repeat(" ", width-filled), done, total)
		if done == total {
			fmt.Fprintln(w)
		}
	}
}
