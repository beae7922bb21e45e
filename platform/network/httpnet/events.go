package httpnet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/phone"
)

// The event types the network posts to the platform's callback endpoint
// (POST /api/v1/network/events).
const (
	// EventAccountVerified: the owner of an account was verified; data
	// AccountVerified.
	EventAccountVerified = "account.verified"
	// EventMessageDelivered: a delivered message reached the recipient; data
	// MessageDelivered.
	EventMessageDelivered = "message.delivered"
	// EventMessageFailed: a message the network accepted could not reach the
	// recipient; data MessageFailed.
	EventMessageFailed = "message.failed"
	// EventMessageRead: the recipient read a delivered message; data
	// MessageRead.
	EventMessageRead = "message.read"
	// EventMessageReceived: an account wrote a message to another account
	// (for the platform, to one of an organization's sender numbers); data
	// MessageReceived.
	EventMessageReceived = "message.received"
)

// eventTypes lists the event types, for the refusal of an unknown one.
const eventTypes = EventAccountVerified + ", " + EventMessageDelivered + ", " + EventMessageFailed + ", " +
	EventMessageRead + ", " + EventMessageReceived + ", " + EventTemplateReviewed

// CodeUnknownEventType (422) answers an event of a type the platform does not
// know.
const CodeUnknownEventType = "unknown_event_type"

// maxEventIDLen bounds Event.ID.
const maxEventIDLen = 255

// Event is one network event: {"id", "type", "occurred_at", "data"}.
type Event struct {
	// ID is the network's unique id of the event ("evt_..."); a redelivery
	// of the event carries the same id.
	ID string `json:"id"`
	// Type is one of the Event* constants.
	Type string `json:"type"`
	// OccurredAt is when it happened (RFC 3339). Optional.
	OccurredAt *time.Time `json:"occurred_at"`
	// Data is the type's payload.
	Data json.RawMessage `json:"data"`
}

// AccountVerified is the data of account.verified.
type AccountVerified struct {
	// Phone is the account's phone (E.164).
	Phone string `json:"phone"`
}

// MessageDelivered is the data of message.delivered.
type MessageDelivered struct {
	// Reference is the one the platform passed to Deliver.
	Reference string `json:"reference"`
	// DeliveredAt is when the recipient got it. Default: the event's
	// occurred_at, else the time it is received.
	DeliveredAt *time.Time `json:"delivered_at"`
}

// MessageFailed is the data of message.failed.
type MessageFailed struct {
	// Reference is the one the platform passed to Deliver.
	Reference string `json:"reference"`
	// ErrorCode and ErrorMessage say why; they become the message's.
	// Defaults "delivery_failed" and a generic sentence.
	ErrorCode    string `json:"error_code"`
	ErrorMessage string `json:"error_message"`
	// FailedAt is when it failed. Default: the event's occurred_at, else the
	// time it is received.
	FailedAt *time.Time `json:"failed_at"`
}

// MessageRead is the data of message.read.
type MessageRead struct {
	// Reference is the one the platform passed to Deliver.
	Reference string `json:"reference"`
	// ReadAt is when the recipient read it. Default: the event's
	// occurred_at, else the time it is received.
	ReadAt *time.Time `json:"read_at,omitempty"`
}

// MessageReceived is the data of message.received: a message an account
// wrote to another.
type MessageReceived struct {
	// ID is the network's id of the message (at most 255 bytes), unique on
	// the network: a redelivered event carries the same.
	ID string `json:"id"`
	// FromPhone is the writer's phone, ToPhone the recipient's; Decode
	// normalises both to E.164.
	FromPhone string `json:"from_phone"`
	ToPhone   string `json:"to_phone"`
	// ConversationID is the network's conversation of the two accounts, the
	// conversation_id its deliveries between them answer.
	ConversationID int64 `json:"conversation_id"`
	network.Media
	// SentAt is when the account wrote it. Default: the event's
	// occurred_at, else the time it is received.
	SentAt *time.Time `json:"sent_at,omitempty"`
}

// messageTypes are the types a message.received may have.
var messageTypes = map[string]bool{"text": true, "image": true, "voice": true, "document": true}

// validate checks m, normalising its phones, and records what is wrong in v.
func (m *MessageReceived) validate(v *apperr.Validation) {
	switch {
	case m.ID == "":
		v.Add("data.id", "is required")
	case len(m.ID) > maxEventIDLen:
		v.Add("data.id", fmt.Sprintf("must be at most %d characters", maxEventIDLen))
	}
	for _, f := range []struct {
		name  string
		phone *string
	}{{"data.from_phone", &m.FromPhone}, {"data.to_phone", &m.ToPhone}} {
		if *f.phone == "" {
			v.Add(f.name, "is required")
			continue
		}
		p, err := phone.Normalize(*f.phone)
		if err != nil {
			v.Add(f.name, "must be a valid phone number")
			continue
		}
		*f.phone = p
	}
	switch {
	case m.ConversationID == 0:
		v.Add("data.conversation_id", "is required")
	case m.ConversationID < 0:
		v.Add("data.conversation_id", "must be positive")
	}
	switch {
	case m.Type == "":
		v.Add("data.type", "is required")
	case !messageTypes[m.Type]:
		v.Add("data.type", "must be one of text, image, voice, document")
	}
	if m.Content == "" {
		v.Add("data.content", "is required")
	}
	if m.FileSize < 0 {
		v.Add("data.file_size", "must be 0 or more")
	}
	if m.Duration < 0 {
		v.Add("data.duration", "must be 0 or more")
	}
}

// Decoded is a validated event with its data decoded: exactly one of
// AccountVerified, MessageDelivered, MessageFailed, MessageRead,
// MessageReceived and TemplateReviewed is set, by Type.
type Decoded struct {
	Event
	AccountVerified  *AccountVerified
	MessageDelivered *MessageDelivered
	MessageFailed    *MessageFailed
	MessageRead      *MessageRead
	MessageReceived  *MessageReceived
	TemplateReviewed *TemplateReviewed
}

// Decode validates ev and decodes its data. Failures are *apperr.Error:
// 422 unknown_event_type for a type it does not know; 422 validation_failed
// naming the fields for a missing id, type or required data field, data that
// is not an object, a data field of the wrong JSON type, or (message.received)
// a phone that is not valid, an unknown message type or a negative size; 400
// malformed_json for data that does not decode otherwise (a time that is not
// RFC 3339). The phones of a message.received are normalised to E.164.
func Decode(ev Event) (Decoded, error) {
	d := Decoded{Event: ev}
	var v apperr.Validation
	switch {
	case ev.ID == "":
		v.Add("id", "is required")
	case len(ev.ID) > maxEventIDLen:
		v.Add("id", fmt.Sprintf("must be at most %d characters", maxEventIDLen))
	}
	var dst any
	switch ev.Type {
	case EventAccountVerified:
		dst = alloc(&d.AccountVerified)
	case EventMessageDelivered:
		dst = alloc(&d.MessageDelivered)
	case EventMessageFailed:
		dst = alloc(&d.MessageFailed)
	case EventMessageRead:
		dst = alloc(&d.MessageRead)
	case EventMessageReceived:
		dst = alloc(&d.MessageReceived)
	case EventTemplateReviewed:
		dst = alloc(&d.TemplateReviewed)
	case "":
		v.Add("type", "is required")
		return Decoded{}, v.Err()
	default:
		return Decoded{}, apperr.New(apperr.KindInvalid, CodeUnknownEventType,
			fmt.Sprintf("Event type %q is not one of %s.", ev.Type, eventTypes))
	}
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 || data[0] != '{' {
		v.Add("data", "must be an object")
		return Decoded{}, v.Err()
	}
	if err := json.Unmarshal(data, dst); err != nil {
		// A field of the wrong JSON type is a field error, as in every other
		// request body (httpx.BindJSON); what does not decode otherwise (a
		// time that is not RFC 3339) is malformed.
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			v.Add("data."+typeErr.Field, "has the wrong JSON type")
			return Decoded{}, v.Err()
		}
		return Decoded{}, apperr.Wrap(err, apperr.KindMalformed, "malformed_json",
			"The event's data does not match its type.")
	}
	switch {
	case d.AccountVerified != nil && d.AccountVerified.Phone == "":
		v.Add("data.phone", "is required")
	case d.MessageDelivered != nil && d.MessageDelivered.Reference == "":
		v.Add("data.reference", "is required")
	case d.MessageFailed != nil && d.MessageFailed.Reference == "":
		v.Add("data.reference", "is required")
	case d.MessageRead != nil && d.MessageRead.Reference == "":
		v.Add("data.reference", "is required")
	case d.MessageReceived != nil:
		d.MessageReceived.validate(&v)
	case d.TemplateReviewed != nil:
		d.TemplateReviewed.validate(&v)
	}
	if err := v.Err(); err != nil {
		return Decoded{}, err
	}
	return d, nil
}

// alloc points *p at a new T, which it returns: the data of an event, for
// Decode to unmarshal into.
func alloc[T any](p **T) *T {
	*p = new(T)
	return *p
}

// Receipt returns the receipt a message.delivered, message.failed or
// message.read reports, its time defaulted as At does with received (the
// time the event was received); false for another type. A failed receipt's
// error fields are the event's, empty when it has none.
func (d Decoded) Receipt(received time.Time) (network.Receipt, bool) {
	switch {
	case d.MessageDelivered != nil:
		return network.Receipt{Reference: d.MessageDelivered.Reference, Status: network.ReceiptDelivered,
			At: d.At(d.MessageDelivered.DeliveredAt, received)}, true
	case d.MessageFailed != nil:
		return network.Receipt{Reference: d.MessageFailed.Reference, Status: network.ReceiptFailed,
			At: d.At(d.MessageFailed.FailedAt, received), ErrorCode: d.MessageFailed.ErrorCode,
			ErrorMessage: d.MessageFailed.ErrorMessage}, true
	case d.MessageRead != nil:
		return network.Receipt{Reference: d.MessageRead.Reference, Status: network.ReceiptRead,
			At: d.At(d.MessageRead.ReadAt, received)}, true
	default:
		return network.Receipt{}, false
	}
}

// Inbound returns the message a message.received reports, its time
// defaulted as At does with received (the time the event was received);
// false for another type.
func (d Decoded) Inbound(received time.Time) (network.Inbound, bool) {
	m := d.MessageReceived
	if m == nil {
		return network.Inbound{}, false
	}
	return network.Inbound{
		ID: m.ID, FromPhone: m.FromPhone, ToPhone: m.ToPhone, ConversationID: m.ConversationID,
		Media: m.Media, At: d.At(m.SentAt, received),
	}, true
}

// At returns t when set, else the event's occurred_at when set, else
// fallback: the time a receipt applies.
func (d Decoded) At(t *time.Time, fallback time.Time) time.Time {
	switch {
	case t != nil:
		return t.UTC()
	case d.OccurredAt != nil:
		return d.OccurredAt.UTC()
	default:
		return fallback.UTC()
	}
}
