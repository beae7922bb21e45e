package campaigns

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/sqlq"
)

// recipientsPerInsert is the most recipients one routed VALUES insert
// carries (five parameters each, well below PostgreSQL's 65,535).
const recipientsPerInsert = 1000

// addRecipients inserts b's recipients into campaign id of tenant t in tx,
// in their order, each phone the campaign does not have yet, and returns
// how many it inserted. On one server, one statement (add_recipients);
// routed (Config.Routed, on Citus), VALUES statements of at most
// recipientsPerInsert rows, in order (add_recipients_routed, by sqlq's
// PgxRows: each row with parameters of its own), which Citus routes to the
// tenant's node, so the transaction commits there in one phase.
func (s *Service) addRecipients(ctx context.Context, tx pgx.Tx, t db.Tenant, id int64, b batch) (int, error) {
	now := s.clock.Now()
	if !s.routed {
		tag, err := db.ExecNamed(ctx, tx, s.q, "add_recipients", t.Quoted(), sqlq.Args{
			"id": id, "phones": b.phones, "variables": b.variables, "refs": b.refs, "now": now,
		})
		return int(tag.RowsAffected()), err
	}
	added := 0
	for from := 0; from < len(b.phones); from += recipientsPerInsert {
		to := min(from+recipientsPerInsert, len(b.phones))
		rows := make([]sqlq.Args, 0, to-from)
		for i := from; i < to; i++ {
			rows = append(rows, sqlq.Args{"id": id, "phone": b.phones[i], "variables": b.variables[i], "ref": b.refs[i], "now": now})
		}
		text, args, err := s.q.PgxRows("add_recipients_routed", t.Quoted(), rows)
		if err != nil {
			return 0, err
		}
		tag, err := tx.Exec(ctx, text, append([]any{pgx.QueryExecModeExec}, args...)...)
		if err != nil {
			return 0, err
		}
		added += int(tag.RowsAffected())
	}
	return added, nil
}
