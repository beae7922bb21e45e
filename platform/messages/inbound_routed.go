package messages

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/sqlq"
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
	query, args, err := s.q.Pgx("routed_sender_active", sc, sqlq.Args{"sender_id": senderID, "to_phone": to})
	if err != nil {
		return 0, nil, err
	}
	active, err := s.prep.QueryFirst(ctx, tx, query, args, func(db.Rows) error { return nil })
	if err != nil {
		return 0, nil, fmt.Errorf("read sender number %d: %w", senderID, err)
	}
	if !active {
		return 0, nil, nil
	}
	now := s.clock.Now()
	if query, args, err = s.q.Pgx("routed_insert_inbound", sc, inboundArgs(senderID, to, in, now)); err != nil {
		return 0, nil, err
	}
	n, evs, err := s.changes.Run(ctx, tx, query, args, 1)
	if err != nil || n == 0 {
		return n, evs, err
	}
	if err := s.prep.Named(ctx, tx, s.q, "routed_count_received", sc,
		sqlq.Args{"sender_id": senderID, "day": Day(now)}, nil); err != nil {
		return 0, nil, fmt.Errorf("count it received: %w", err)
	}
	if err := s.prep.Named(ctx, tx, s.q, "routed_move_window", sc,
		sqlq.Args{"sender_id": senderID, "phone": in.FromPhone, "at": in.At}, nil); err != nil {
		return 0, nil, fmt.Errorf("move the service window: %w", err)
	}
	return n, evs, nil
}
