package webhooks

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
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
	err := s.sql.Query(ctx, tx, sqlFor(t, `WITH o AS (
		  DELETE FROM {outbox} WHERE id IN (SELECT id FROM {outbox} ORDER BY id LIMIT $1)
		  RETURNING *)
		SELECT created_at, event_ids, event_types, event_keys, bodies, delivery_events, endpoint_ids
		  FROM o ORDER BY id`), []any{limit}, func(r db.Rows) error {
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
	err = s.sql.Query(ctx, tx, sqlFor(t, `SELECT id FROM {endpoints} WHERE id = ANY($1::bigint[]) FOR KEY SHARE`),
		[]any{named}, func(r db.Rows) error {
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
	var args []any
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
			args = append(args, e, o.eventIDs[p], o.types[p], o.bodies[p], o.keys[p], now, o.created)
			if len(args) == routedBatch*7 {
				if out, err = s.insertDeliveries(ctx, tx, t, args, out); err != nil {
					return 0, nil, err
				}
				args = args[:0]
			}
		}
	}
	if len(args) > 0 {
		if out, err = s.insertDeliveries(ctx, tx, t, args, out); err != nil {
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

// insertDeliveries inserts the deliveries of args (seven values each:
// endpoint, event id, type, body, key, their next attempt's and update's
// time, and their creation) in one VALUES statement, in their order, and appends
// them to out. The statement's text depends on how many it carries, so it
// is not prepared.
func (s *Service) insertDeliveries(ctx context.Context, tx pgx.Tx, t db.Tenant, args []any, out []delivered) ([]delivered, error) {
	var b strings.Builder
	b.WriteString(sqlFor(t, `INSERT INTO {deliveries}
		(endpoint_id, event_id, event_type, body, key, next_attempt_at, updated_at, created_at) VALUES `))
	for i := 0; i < len(args); i += 7 {
		if i > 0 {
			b.WriteString(", ")
		}
		n := func(k int) string { return "$" + strconv.Itoa(i+k) }
		b.WriteString("(" + n(1) + "::bigint, " + n(2) + "::text, " + n(3) + "::text, " + n(4) + "::text, " +
			n(5) + "::text, " + n(6) + "::timestamptz, " + n(6) + "::timestamptz, " + n(7) + "::timestamptz)")
	}
	b.WriteString(" RETURNING id, endpoint_id, created_at")
	rows, err := tx.Query(ctx, b.String(), append([]any{pgx.QueryExecModeExec}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("insert webhook deliveries: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var d delivered
		if err := rows.Scan(&d.id, &d.endpoint, &d.created); err != nil {
			return nil, fmt.Errorf("insert webhook deliveries: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("insert webhook deliveries: %w", err)
	}
	return out, nil
}
