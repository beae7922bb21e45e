// Package webhooks tells an organization's servers what happened, without
// polling: endpoints subscribed to event types, events written in the
// transaction of the change they report, and their signed delivery
// (Standard Webhooks) at least once, in order per message, by River jobs.
package webhooks

import (
	"context"
	"time"

	"github.com/bizmsg/platform/platform/db"
	"github.com/jackc/pgx/v5"
)

// Event types (docs/api.md, §Webhooks).
const (
	EventMessageSent      = "message.sent"
	EventMessageDelivered = "message.delivered"
	EventMessageRead      = "message.read"
	EventMessageFailed    = "message.failed"
	EventMessageReceived  = "message.received"
	// EventMessageCanceled: a scheduled send was canceled before its
	// release (docs/api.md, §Scheduled sends).
	EventMessageCanceled     = "message.canceled"
	EventSenderStatusChanged = "sender_number.status_changed"
	EventAPIKeyExpiring      = "api_key.expiring" //nolint:gosec // G101: an event type, not a credential
	EventContactOptedOut     = "contact.opted_out"
	EventContactOptedIn      = "contact.opted_in"
	EventTemplateStatus      = "template.status_changed"
	EventCampaignStarted     = "campaign.started"
	EventCampaignCompleted   = "campaign.completed"
)

// EventTypes returns every event type, in the order of the reference.
func EventTypes() []string {
	return []string{
		EventMessageSent, EventMessageDelivered, EventMessageRead, EventMessageFailed,
		EventMessageReceived, EventMessageCanceled, EventSenderStatusChanged, EventAPIKeyExpiring,
		EventContactOptedOut, EventContactOptedIn, EventTemplateStatus,
		EventCampaignStarted, EventCampaignCompleted,
	}
}

// Event is a change to report, recorded by the service that makes the change
// inside the transaction that makes it (Service.Emit).
type Event struct {
	// Type is one of the Event* constants.
	Type string
	// Key orders events: the events of one key reach an endpoint in the
	// order they were emitted ("message:<id>", "sender_number:<id>",
	// "api_key:<id>").
	Key string
	// Data is the resource the payload carries (a messages.Message, a
	// sender number, an API key): appended by its AppendJSON when it is a
	// jsonenc.Appender, else marshalled with encoding/json.
	Data any
	// At is when the change happened: the payload's timestamp.
	At time.Time
}

// Emitter records events inside the transaction of the change they report:
// the webhooks Service is one. A service that changes what an event
// reports takes an Emitter (nil: it reports nothing).
type Emitter interface {
	Emit(ctx context.Context, tx pgx.Tx, t db.Tenant, events ...Event) error
}
