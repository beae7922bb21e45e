package messages

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/webhooks"
)

// storeInboundRouted is storeInbound on Citus (Config.Routed;
// docs/scaling.md, §Two-phase commits). storeInbound's INSERT steps make
// Citus plan its statement through the coordinator: it sends each step's
// rows to every worker and commits in two phases, so while any worker is
// down every organization's inbound messages fail. Here each statement
// touches the tenant's tables alone and inserts by VALUES, so Citus routes
// it to the tenant's node and the transaction commits there in one phase:
//
//  1. the number is read, active, in the tenant's own table (nothing is
//     stored when it is not);
//  2. the message is inserted, nothing when in.ID was stored before;
//  3. for a stored message, its day's received counter and the writer's
//     last_inbound are upserted.
func (s *Service) storeInboundRouted(ctx context.Context, tx pgx.Tx, t db.Tenant, senderID int64, to string, in Inbound) (int, []webhooks.Event, error) {
	sc := t.Quoted()
	active, err := s.prep.QueryFirst(ctx, tx, `SELECT 1 FROM `+sc+`.sender_numbers
		WHERE id = $1::bigint AND phone = $2::text AND status = 'active'`, []any{senderID, to}, func(db.Rows) error { return nil })
	if err != nil {
		return 0, nil, fmt.Errorf("read sender number %d: %w", senderID, err)
	}
	if !active {
		return 0, nil, nil
	}
	now := s.clock.Now()
	n, evs, err := s.changes.Run(ctx, tx, `INSERT INTO `+sc+`.messages AS m (direction, sender_number_id, to_phone,
		       from_phone, conversation_id, type, content, file_name, file_size, file_type, duration, status,
		       received_at, network_inbound_id, created_at, updated_at)
		VALUES ('inbound', $1::bigint, $2::text, $3::text, $4::bigint, $5::text, $6::text, $7::text, $8::bigint,
		        $9::text, $10::bigint, 'received', $11::timestamptz, $12::text, $13::timestamptz, $13::timestamptz)
		ON CONFLICT (network_inbound_id) WHERE network_inbound_id IS NOT NULL DO NOTHING
		RETURNING ''::text, `+Columns,
		[]any{senderID, to, in.FromPhone, db.Null(in.ConversationID), in.Type, in.Content,
			db.Null(in.FileName), db.Null(in.FileSize), db.Null(in.FileType), db.Null(int64(in.Duration)),
			in.At, in.ID, now}, 1)
	if err != nil || n == 0 {
		return n, evs, err
	}
	if err := s.prep.Exec(ctx, tx, `INSERT INTO `+sc+`.daily_usage AS u (sender_number_id, day, side, received)
		VALUES ($1::bigint, $2::date, 'receive', 1)
		ON CONFLICT (sender_number_id, day, side) DO UPDATE SET received = u.received + 1`,
		senderID, Day(now)); err != nil {
		return 0, nil, fmt.Errorf("count it received: %w", err)
	}
	if err := s.prep.Exec(ctx, tx, `INSERT INTO `+sc+`.last_inbound AS l (sender_number_id, phone, at)
		VALUES ($1::bigint, $2::text, $3::timestamptz)
		ON CONFLICT (sender_number_id, phone) DO UPDATE SET at = greatest(l.at, EXCLUDED.at)`,
		senderID, in.FromPhone, in.At); err != nil {
		return 0, nil, fmt.Errorf("move the service window: %w", err)
	}
	return n, evs, nil
}
