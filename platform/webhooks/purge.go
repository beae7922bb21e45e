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
	res, err := s.db.Bun.NewDelete().Model((*Delivery)(nil)).ModelTableExpr(t.TableAs("webhook_deliveries", "d")).
		Where("d.state <> ?", StatePending).Where("d.created_at < ?", before).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("purge webhook deliveries of %s: %w", t.Schema, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("purge webhook deliveries of %s: %w", t.Schema, err)
	}
	return n, nil
}
