package webhooks

import (
	"context"
	"fmt"
	"time"

	"github.com/bizmsg/platform/platform/db"
)

// Purge deletes t's finished deliveries (succeeded or failed) created more
// than Config.Retention before now, and the events created before then that
// no delivery refers to any more (an event whose last delivery goes in one
// run goes in the next). Pending deliveries stay whatever their age. It
// returns how many rows went; the hourly housekeeping job runs it for every
// tenant.
func (s *Service) Purge(ctx context.Context, t db.Tenant, now time.Time) (int64, error) {
	before := now.Add(-s.cfg.Retention)
	var deliveries, events int64
	_, err := s.queryRow(ctx, nil, sqlFor(t, `WITH d AS (
			DELETE FROM {deliveries} WHERE state <> 'pending' AND created_at < $1::timestamptz RETURNING 1),
		ev AS (
			DELETE FROM {events} ev WHERE ev.created_at < $1::timestamptz
			   AND NOT EXISTS (SELECT 1 FROM {deliveries} x WHERE x.event_id = ev.id)
			RETURNING 1)
		SELECT (SELECT count(*) FROM d), (SELECT count(*) FROM ev)`), []any{before}, &deliveries, &events)
	if err != nil {
		return 0, fmt.Errorf("purge webhook deliveries of %s: %w", t.Schema, err)
	}
	return deliveries + events, nil
}
