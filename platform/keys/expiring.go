package keys

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
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
	rows, err := s.pool.Query(ctx, `
		SELECT `+keyColumns+`, o.schema_name
		FROM central.api_keys k JOIN central.organizations o ON o.id = k.organization_id
		WHERE k.revoked_at IS NULL AND k.expires_at > $1 AND k.expires_at <= $2
		  AND o.schema_name IS NOT NULL
		ORDER BY k.id`, now, now.Add(ExpiryNotice))
	if err != nil {
		return 0, fmt.Errorf("expiring api keys: %w", err)
	}
	type expiring struct {
		key    Key
		schema string
	}
	var due []expiring
	for rows.Next() {
		var e expiring
		if err := scanKey(rows, &e.key, &e.schema); err != nil {
			rows.Close()
			return 0, fmt.Errorf("scan expiring api key: %w", err)
		}
		due = append(due, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("expiring api keys: %w", err)
	}
	n := 0
	for _, e := range due {
		t, err := db.NewTenant(e.key.OrgID, e.schema)
		if err != nil {
			return n, fmt.Errorf("expiring api key %d: %w", e.key.ID, err)
		}
		sent, err := s.notifyExpiring(ctx, t, e.key, now)
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
	err := db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO `+t.Table("notices")+` (kind, ref, created_at)
			VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, webhooks.EventAPIKeyExpiring, k.ID, now)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		sent = true
		return s.cfg.Events.Emit(ctx, tx, t, webhooks.Event{
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
