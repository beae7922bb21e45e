package webhooks

import (
	"context"
	"fmt"
	"time"

	"github.com/bizmsg/platform/platform/db"
)

// Purge deletes t's finished deliveries (succeeded or failed) created more
// than Config.Retention before now, their events with them (a delivery
// carries its event). Pending deliveries stay whatever their age. It
// returns how many went; the hourly housekeeping job runs it for every
// tenant.
func (s *Service) Purge(ctx context.Context, t db.Tenant, now time.Time) (int64, error) {
	before := now.Add(-s.cfg.Retention)
	var n int64
	_, err := s.queryRow(ctx, nil, sqlFor(t, `WITH d AS (
			DELETE FROM {deliveries} WHERE state <> 'pending' AND created_at < $1::timestamptz RETURNING 1)
		SELECT count(*) FROM d`), []any{before}, &n)
	if err != nil {
		return 0, fmt.Errorf("purge webhook deliveries of %s: %w", t.Schema, err)
	}
	return n, nil
}
