package campaigns

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
)

// recipientsPerInsert is the most recipients one routed VALUES insert
// carries (three parameters each, well below PostgreSQL's 65,535).
const recipientsPerInsert = 1000

// addRecipients inserts b's recipients into campaign id of tenant t in tx,
// in their order, each phone the campaign does not have yet, and returns
// how many it inserted. On one server, one statement (addRecipientsSQL);
// routed (Config.Routed, on Citus), VALUES statements of at most
// recipientsPerInsert rows, in order, which Citus routes to the tenant's
// node, so the transaction commits there in one phase.
func (s *Service) addRecipients(ctx context.Context, tx pgx.Tx, t db.Tenant, id int64, b batch) (int, error) {
	now := s.clock.Now()
	if !s.routed {
		tag, err := tx.Exec(ctx, sqlFor(t, addRecipientsSQL), id, b.phones, b.variables, b.refs, now)
		return int(tag.RowsAffected()), err
	}
	added := 0
	for from := 0; from < len(b.phones); from += recipientsPerInsert {
		to := min(from+recipientsPerInsert, len(b.phones))
		var q strings.Builder
		q.WriteString(sqlFor(t, `INSERT INTO {recipients} (campaign_id, phone, variables, client_reference, updated_at) VALUES `))
		args := []any{pgx.QueryExecModeExec, id, now}
		for i := from; i < to; i++ {
			if i > from {
				q.WriteString(", ")
			}
			n := func(k int) string { return "$" + strconv.Itoa(3*(i-from)+k) }
			q.WriteString("($1::bigint, " + n(3) + "::text, " + n(4) + "::text::jsonb, " + n(5) + "::text, $2::timestamptz)")
			args = append(args, b.phones[i], b.variables[i], b.refs[i])
		}
		q.WriteString(` ON CONFLICT ON CONSTRAINT campaign_recipients_phone_key DO NOTHING`)
		tag, err := tx.Exec(ctx, q.String(), args...)
		if err != nil {
			return 0, err
		}
		added += int(tag.RowsAffected())
	}
	return added, nil
}
