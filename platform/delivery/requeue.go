package delivery

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"

	"github.com/bizmsg/platform/platform/messages"
)

// Requeue makes message id of tenant t deliverable again, in tx, for an
// operator who retries its delivery job once the cause of its failure is
// gone (platform admin jobs retry): a message that failed because the
// network could not be reached (network_error) goes back to queued, its
// error cleared and its day's failed count lowered; a queued message stays
// as it is. It reports false, changing nothing, for a message that is sent
// or that failed for a reason of its own (a refusal is not retried), and
// for one that does not exist.
func (s *Service) Requeue(ctx context.Context, tx pgx.Tx, t db.Tenant, id int64) (bool, error) {
	var status string
	err := tx.QueryRow(ctx, `WITH m AS (
		  UPDATE `+t.Table("messages")+` x
		     SET status = 'queued', error_code = NULL, error_message = NULL, failed_at = NULL,
		         updated_at = $3::timestamptz
		   WHERE x.id = $1::bigint AND x.status = 'failed' AND x.error_code = $2::text
		  RETURNING x.sender_number_id, x.created_at),
		u AS (
		  UPDATE `+t.Table("daily_usage")+` d SET failed = d.failed - 1 FROM m
		   WHERE d.side = 'deliver' AND d.sender_number_id = m.sender_number_id
		     AND d.day = (m.created_at AT TIME ZONE 'UTC')::date AND d.failed > 0)
		SELECT CASE WHEN EXISTS (SELECT 1 FROM m) THEN 'requeued'
		            ELSE coalesce((SELECT status FROM `+t.Table("messages")+` WHERE id = $1::bigint), '') END`,
		id, messages.CodeNetworkError, s.clock.Now()).Scan(&status)
	if err != nil {
		return false, fmt.Errorf("requeue message %d of %s: %w", id, t.Schema, err)
	}
	if status == "requeued" {
		s.log.InfoContext(ctx, "message requeued", "schema", t.Schema, "message_id", id)
	}
	return status == "requeued" || status == messages.StatusQueued, nil
}
