package httpnet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bizmsg/platform/platform/apperr"
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
)

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

// Decoded is a validated event with its data decoded: exactly one of
// AccountVerified, MessageDelivered and MessageFailed is set, by Type.
type Decoded struct {
	Event
	AccountVerified  *AccountVerified
	MessageDelivered *MessageDelivered
	MessageFailed    *MessageFailed
}

// Decode validates ev and decodes its data. Failures are *apperr.Error:
// 422 unknown_event_type for a type it does not know; 422 validation_failed
// naming the fields for a missing id, type or required data field, data that
// is not an object, or a data field of the wrong JSON type; 400 malformed_json
// for data that does not decode otherwise (a time that is not RFC 3339).
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
		d.AccountVerified = new(AccountVerified)
		dst = d.AccountVerified
	case EventMessageDelivered:
		d.MessageDelivered = new(MessageDelivered)
		dst = d.MessageDelivered
	case EventMessageFailed:
		d.MessageFailed = new(MessageFailed)
		dst = d.MessageFailed
	case "":
		v.Add("type", "is required")
		return Decoded{}, v.Err()
	default:
		return Decoded{}, apperr.New(apperr.KindInvalid, CodeUnknownEventType,
			fmt.Sprintf("Event type %q is not one of %s, %s, %s.", ev.Type,
				EventAccountVerified, EventMessageDelivered, EventMessageFailed))
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
	}
	if err := v.Err(); err != nil {
		return Decoded{}, err
	}
	return d, nil
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
