package webhooks

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/sqlq"
)

// The expansion on Citus (Config.Routed; docs/scaling.md, §A worker node
// down). The one-statement expansion (expand) inserts its deliveries in an
// INSERT step: Citus plans it through the coordinator, copies each CTE's
// rows to every worker and commits in two phases, and while any worker is
// down every organization's expansions fail. Here each statement touches
// the tenant's tables alone, with no INSERT ... SELECT, so Citus routes it
// to the tenant's node and the transaction commits there in one phase:
//
//  1. the oldest outbox rows are deleted and returned (a DELETE step and a
//     SELECT of it);
//  2. the endpoints they name are read, and locked against their deletion
//     (FOR KEY SHARE), so the deliveries of an endpoint deleted since are
//     dropped as expand drops them;
//  3. the deliveries are inserted by a multi-row VALUES, in the order of
//     their outbox rows and their places in them, so their ids are drawn
//     in that order.

// routedBatch is the most deliveries one VALUES insert carries (seven
// parameters each, well below PostgreSQL's 65,535).
const routedBatch = 1000

// outboxRow is a webhook outbox row as the routed expansion reads it.
type outboxRow struct {
	created                       time.Time
	eventIDs, types, keys, bodies []string
	places                        []int32
	endpoints                     []int64
}

// expandRouted is expand on Citus: it turns at most limit of t's oldest
// outbox rows into deliveries in tx, deletes them, and returns how many
// rows it deleted and the deliveries' ids, endpoints and creation times in
// id order.
func (s *Service) expandRouted(ctx context.Context, tx pgx.Tx, t db.Tenant, limit int) (int, []delivered, error) {
	var rows []outboxRow
	err := s.query(ctx, tx, t, "take_outbox", sqlq.Args{"limit": limit}, func(r db.Rows) error {
		for r.Next() {
			var o outboxRow
			if err := r.Scan(&o.created, &o.eventIDs, &o.types, &o.keys, &o.bodies, &o.places, &o.endpoints); err != nil {
				return err
			}
			rows = append(rows, o)
		}
		return nil
	})
	if err != nil || len(rows) == 0 {
		return 0, nil, err
	}
	var named []int64
	for _, o := range rows {
		for _, e := range o.endpoints {
			if !slices.Contains(named, e) {
				named = append(named, e)
			}
		}
	}
	live := map[int64]bool{}
	err = s.query(ctx, tx, t, "lock_endpoints", sqlq.Args{"ids": named}, func(r db.Rows) error {
		for r.Next() {
			var id int64
			if err := r.Scan(&id); err != nil {
				return err
			}
			live[id] = true
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("lock webhook endpoints: %w", err)
	}
	var batch []sqlq.Args
	var out []delivered
	now := s.clock.Now()
	for _, o := range rows {
		for i, e := range o.endpoints {
			if !live[e] {
				continue
			}
			p := o.places[i] - 1
			if p < 0 || int(p) >= len(o.eventIDs) {
				return 0, nil, fmt.Errorf("webhook outbox row names event %d of %d", p+1, len(o.eventIDs))
			}
			batch = append(batch, deliveryRow(e, o.eventIDs[p], o.types[p], o.bodies[p], o.keys[p], now, o.created))
			if len(batch) == routedBatch {
				if out, err = s.insertDeliveries(ctx, tx, t, batch, out); err != nil {
					return 0, nil, err
				}
				batch = batch[:0]
			}
		}
	}
	if len(batch) > 0 {
		if out, err = s.insertDeliveries(ctx, tx, t, batch, out); err != nil {
			return 0, nil, err
		}
	}
	slices.SortFunc(out, func(a, b delivered) int { return cmp.Compare(a.id, b.id) })
	return len(rows), out, nil
}

// delivered is a delivery the expansion made.
type delivered struct {
	id, endpoint int64
	created      time.Time
}

// deliveryRow is one row of insertDeliveries: a delivery of event eventID
// (its type, body and key) to endpoint, due and updated at now, created at
// created.
func deliveryRow(endpoint int64, eventID, typ, body, key string, now, created time.Time) sqlq.Args {
	return sqlq.Args{"endpoint_id": endpoint, "event_id": eventID, "event_type": typ, "body": body, "key": key,
		"now": now, "created_at": created}
}

// insertDeliveries inserts the deliveries of rows (deliveryRow) in one
// VALUES statement (queries/insert_deliveries.sql, its row written once
// per delivery by sqlq's PgxRows), in their order, and appends them to
// out. The statement's text depends on how many it carries, so it is not
// prepared.
func (s *Service) insertDeliveries(ctx context.Context, tx pgx.Tx, t db.Tenant, rows []sqlq.Args, out []delivered) ([]delivered, error) {
	text, args, err := s.q.PgxRows("insert_deliveries", t.Quoted(), rows)
	if err != nil {
		return nil, fmt.Errorf("insert webhook deliveries: %w", err)
	}
	res, err := tx.Query(ctx, text, append([]any{pgx.QueryExecModeExec}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("insert webhook deliveries: %w", err)
	}
	defer res.Close()
	for res.Next() {
		var d delivered
		if err := res.Scan(&d.id, &d.endpoint, &d.created); err != nil {
			return nil, fmt.Errorf("insert webhook deliveries: %w", err)
		}
		out = append(out, d)
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("insert webhook deliveries: %w", err)
	}
	return out, nil
}
