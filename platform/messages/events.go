package messages

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/webhooks"
)

// eventKey is the ordering key of message id's events.
func eventKey(id int64) string { return "message:" + itoa(id) }

// appendEvents appends to evs the events of message r's move from status
// old to its status now, in the order of the lifecycle: a queued message
// recorded delivered at once (a network that confirms delivery) is sent,
// then delivered; a message that reached read or failed reports that. A
// move that is not a status change appends nothing.
func appendEvents(evs []webhooks.Event, old string, r *row) []webhooks.Event {
	if old == r.Status {
		return evs
	}
	m := r.message()
	key := eventKey(r.ID)
	switch r.Status {
	case StatusSent:
		evs = append(evs, webhooks.Event{Type: webhooks.EventMessageSent, Key: key, Data: m, At: orTime(m.SentAt, r.UpdatedAt)})
	case StatusDelivered:
		if old == StatusQueued && m.SentAt != nil {
			// Sent and delivered in one record: the sent event shows the
			// message as it was between the two.
			sent := m
			sent.Status, sent.DeliveredAt = StatusSent, nil
			evs = append(evs, webhooks.Event{Type: webhooks.EventMessageSent, Key: key, Data: sent, At: *m.SentAt})
		}
		evs = append(evs, webhooks.Event{Type: webhooks.EventMessageDelivered, Key: key, Data: m, At: orTime(m.DeliveredAt, r.UpdatedAt)})
	case StatusRead:
		evs = append(evs, webhooks.Event{Type: webhooks.EventMessageRead, Key: key, Data: m, At: orTime(m.ReadAt, r.UpdatedAt)})
	case StatusFailed:
		evs = append(evs, webhooks.Event{Type: webhooks.EventMessageFailed, Key: key, Data: m, At: orTime(m.FailedAt, r.UpdatedAt)})
	case StatusReceived:
		evs = append(evs, webhooks.Event{Type: webhooks.EventMessageReceived, Key: key, Data: m, At: orTime(m.ReceivedAt, r.UpdatedAt)})
	}
	return evs
}

// orTime is *p, or def when p is nil.
func orTime(p *time.Time, def time.Time) time.Time {
	if p == nil {
		return def
	}
	return *p
}

// emit hands evs to the recorder in tx; nothing without a recorder or
// events.
func (s *Service) emit(ctx context.Context, tx pgx.Tx, t db.Tenant, evs []webhooks.Event) error {
	if s.events == nil || len(evs) == 0 {
		return nil
	}
	if err := s.events.Emit(ctx, tx, t, evs...); err != nil {
		return fmt.Errorf("record %d events of %s: %w", len(evs), t.Schema, err)
	}
	return nil
}
