package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/jsonenc"
	"github.com/bizmsg/platform/platform/sqlq"
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
// once (marshalPayload: the bytes every attempt sends) and writes them, with
// the endpoints subscribed to each, as one row of the organization's
// webhook outbox, in one statement. After tx commits the process turns
// the row into one pending delivery per event and subscribed endpoint and
// its River job, in that order (outbox.go): tx must come from
// db.BeginFunc, which tells the process of the commit; on any other Emit
// fails (db.ErrNoCommitHook) rather than leave the row for the sweep, a
// minute later.
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
	var subs []subscriber
	err := s.query(ctx, tx, t, "subscribers", sqlq.Args{"types": types}, func(r db.Rows) error {
		for r.Next() {
			var sub subscriber
			if err := r.Scan(&sub.id, &sub.events); err != nil {
				return err
			}
			subs = append(subs, sub)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read webhook subscriptions: %w", err)
	}
	if len(subs) == 0 {
		return nil
	}
	if err := db.AfterCommit(tx, func() { s.outbox.wake(t) }); err != nil {
		return fmt.Errorf("emit webhook events: %w", err)
	}
	return s.record(ctx, tx, t, events, subs)
}

// subscriber is an enabled endpoint and the event types it takes.
type subscriber struct {
	id     int64
	events []string
}

// record writes the outbox row of the events that have subscribers: the
// events in the order given, and for each its subscribers in id order (the
// order their deliveries' ids will follow, which orders the events of one
// key).
func (s *Service) record(ctx context.Context, tx pgx.Tx, t db.Tenant, events []Event, subs []subscriber) error {
	now := s.clock.Now()
	var ids, types, keys, bodies []string
	var places []int32
	var endpoints []int64
	var to []int64
	for _, ev := range events {
		to = to[:0]
		for _, sub := range subs {
			if slices.Contains(sub.events, ev.Type) {
				to = append(to, sub.id)
			}
		}
		if len(to) == 0 {
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
		for _, endpoint := range to {
			places, endpoints = append(places, int32(len(ids))), append(endpoints, endpoint)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	err := s.exec(ctx, tx, t, "record_outbox", sqlq.Args{
		"created_at": now, "event_ids": ids, "event_types": types, "event_keys": keys, "bodies": bodies,
		"delivery_events": places, "endpoint_ids": endpoints,
	})
	if err != nil {
		return fmt.Errorf("record webhook events: %w", err)
	}
	return nil
}
