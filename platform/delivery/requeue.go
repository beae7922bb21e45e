package delivery

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/sqlq"

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
	args := sqlq.Args{"id": id, "code": messages.CodeNetworkError, "now": s.clock.Now()}
	if err := db.QueryRowNamed(ctx, tx, s.q, "requeue", t.Quoted(), args).Scan(&status); err != nil {
		return false, fmt.Errorf("requeue message %d of %s: %w", id, t.Schema, err)
	}
	if status == "requeued" {
		s.log.InfoContext(ctx, "message requeued", "schema", t.Schema, "message_id", id)
	}
	return status == "requeued" || status == messages.StatusQueued, nil
}
