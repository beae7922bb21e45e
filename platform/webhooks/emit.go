package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/jsonenc"
	"github.com/bizmsg/platform/platform/queue"
)

// payload is the body of a webhook request (Standard Webhooks).
type payload struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      any    `json:"data"`
}

// marshalPayload renders an event's payload, {"type", "timestamp",
// "data"}, the timestamp RFC 3339 in UTC to the microsecond. Data that is
// a jsonenc.Appender (a message: the events the send path writes) is
// appended in place; anything else goes through encoding/json. Both write
// the same bytes (TestMarshalPayload).
func marshalPayload(typ string, at time.Time, data any) ([]byte, error) {
	at = at.UTC().Truncate(time.Microsecond)
	a, ok := data.(jsonenc.Appender)
	if !ok {
		return json.Marshal(payload{Type: typ, Timestamp: at.Format(time.RFC3339Nano), Data: data})
	}
	b := make([]byte, 0, 768)
	b = append(b, `{"type":`...)
	b = jsonenc.String(b, typ)
	b = append(b, `,"timestamp":`...)
	b = jsonenc.Time(b, at, time.RFC3339Nano)
	b = append(b, `,"data":`...)
	b = a.AppendJSON(b)
	return append(b, '}'), nil
}

// Emit records events for t's enabled endpoints subscribed to their types,
// in tx: the transaction of the change the events report, so an event
// exists exactly when its change committed. Services call it with the
// events of one change in the order they happened.
//
// When no enabled endpoint of the organization is subscribed to any of the
// events' types (the common case) it runs one read of the endpoints table
// and writes nothing. Otherwise it marshals each such event's payload
// once (marshalPayload: the bytes every attempt sends),
// inserts one pending delivery per event and subscribed endpoint, carrying
// the event (its webhook-id, type and payload), in one statement, and one
// River job per delivery (InsertManyFastTx), all in tx.
//
// An event without a Key is ordered with no other; an event without At is
// stamped with the service clock. An unknown Type is an error.
func (s *Service) Emit(ctx context.Context, tx pgx.Tx, t db.Tenant, events ...Event) error {
	if len(events) == 0 {
		return nil
	}
	known := EventTypes()
	types := make([]string, 0, len(events))
	for _, ev := range events {
		if !slices.Contains(known, ev.Type) {
			return fmt.Errorf("emit webhook event: unknown type %q", ev.Type)
		}
		if !slices.Contains(types, ev.Type) {
			types = append(types, ev.Type)
		}
	}
	subscribed := map[string]bool{}
	err := s.sql.Query(ctx, tx, sqlFor(t, `SELECT DISTINCT unnest(events) FROM {endpoints}
		WHERE enabled AND events && $1::text[]`), []any{types}, func(r db.Rows) error {
		for r.Next() {
			var typ string
			if err := r.Scan(&typ); err != nil {
				return err
			}
			subscribed[typ] = true
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read webhook subscriptions: %w", err)
	}
	if len(subscribed) == 0 {
		return nil
	}
	return s.insertEvents(ctx, tx, t, events, subscribed)
}

// insertEvents writes the deliveries of the events whose types have
// subscribers, and their jobs.
func (s *Service) insertEvents(ctx context.Context, tx pgx.Tx, t db.Tenant, events []Event, subscribed map[string]bool) error {
	now := s.clock.Now()
	var ids, types, keys, bodies []string
	for _, ev := range events {
		if !subscribed[ev.Type] {
			continue
		}
		at := ev.At
		if at.IsZero() {
			at = now
		}
		body, err := marshalPayload(ev.Type, at, ev.Data)
		if err != nil {
			return fmt.Errorf("marshal webhook event %s: %w", ev.Type, err)
		}
		id := newEventID()
		key := ev.Key
		if key == "" {
			key = "event:" + id
		}
		ids, types, keys, bodies = append(ids, id), append(types, ev.Type), append(keys, key), append(bodies, string(body))
	}
	// A delivery per event and subscribed endpoint, in one row with its
	// event's webhook-id, type and body, in the order the events were given
	// (ORDER BY their place, then the endpoint): the delivery id is what
	// orders the events of one key.
	var jobs []river.InsertManyParams
	err := s.sql.Query(ctx, tx, sqlFor(t, `INSERT INTO {deliveries} (endpoint_id, event_id, event_type, body, key, next_attempt_at, created_at, updated_at)
		SELECT e.id, i.event_id, i.type, i.body, i.key, $5::timestamptz, $5::timestamptz, $5::timestamptz
		  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS i(event_id, type, key, body, n)
		  JOIN {endpoints} e ON e.enabled AND i.type = ANY (e.events)
		 ORDER BY i.n, e.id
		RETURNING id, endpoint_id`), []any{ids, types, keys, bodies, now}, func(r db.Rows) error {
		for r.Next() {
			var id, endpoint int64
			if err := r.Scan(&id, &endpoint); err != nil {
				return err
			}
			jobs = append(jobs, queue.WebhookDeliveryJob(queue.WebhookDeliveryArgs{
				OrgID: t.OrgID, Schema: t.Schema, DeliveryID: id, EndpointID: endpoint,
			}))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("insert webhook events: %w", err)
	}
	if len(jobs) == 0 {
		return nil
	}
	if _, err := s.jobs.InsertManyFastTx(ctx, tx, jobs); err != nil {
		return fmt.Errorf("queue webhook deliveries: %w", err)
	}
	return nil
}
