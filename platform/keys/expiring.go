package keys

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/sqlq"
	"github.com/bizmsg/platform/platform/webhooks"
)

// ExpiryNotice is how long before its expiry a key is reported as
// expiring (api_key.expiring, docs/api.md §Webhooks).
const ExpiryNotice = 7 * 24 * time.Hour

// NotifyExpiring records api_key.expiring for every active key that expires
// within ExpiryNotice of now and has not been reported yet, and returns how
// many it reported. Each key is reported once: in its organization's
// schema, a notices row and the event are written in one transaction (the
// central key row is only read, so no transaction spans two schemas). It is
// the work of a periodic job; a key created with less than ExpiryNotice to
// live is reported at the job's next run.
func (s *Service) NotifyExpiring(ctx context.Context, now time.Time) (int, error) {
	if s.cfg.Events == nil {
		return 0, nil
	}
	var due []struct {
		keyRow
		SchemaName string `bun:"schema_name"`
	}
	if err := s.q.Raw(s.db.Bun, "expiring", sqlq.Args{"from": now, "to": now.Add(ExpiryNotice)}).Scan(ctx, &due); err != nil {
		return 0, fmt.Errorf("expiring api keys: %w", err)
	}
	n := 0
	for _, e := range due {
		t, err := db.NewTenant(e.OrganizationID, e.SchemaName)
		if err != nil {
			return n, fmt.Errorf("expiring api key %d: %w", e.ID, err)
		}
		sent, err := s.notifyExpiring(ctx, t, e.key(), now)
		if err != nil {
			return n, err
		}
		if sent {
			n++
		}
	}
	return n, nil
}

// notifyExpiring reports key k of tenant t once; false when it was already.
func (s *Service) notifyExpiring(ctx context.Context, t db.Tenant, k Key, now time.Time) (bool, error) {
	sent := false
	err := s.db.RunInTx(ctx, func(tx db.Tx) error {
		res, err := tx.Bun.NewInsert().Model(&noticeRow{Kind: webhooks.EventAPIKeyExpiring, Ref: k.ID, CreatedAt: now}).
			ModelTableExpr(t.TableAs("notices", "n")).On("CONFLICT DO NOTHING").Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		sent = true
		return s.cfg.Events.Emit(ctx, tx.Pgx(), t, webhooks.Event{
			Type: webhooks.EventAPIKeyExpiring,
			Key:  "api_key:" + strconv.FormatInt(k.ID, 10),
			Data: k.Resource(now),
			At:   now,
		})
	})
	if err != nil {
		return false, fmt.Errorf("notify expiry of api key %d: %w", k.ID, err)
	}
	return sent, nil
}
