// Package messages is the message and its lifecycle: the Message resource
// and its JSON, the statuses, types and error codes every stage of a
// message shares, the receipts that move an outbound message on
// (ApplyReceipt), the inbound messages network accounts write (Receive),
// the history (List, Get), and the helpers with which every stage records a
// change of a message with its webhook events (Changes, AppendEvents).
//
// A message's other stages are services of their own, each over its own
// statements: package acceptance accepts a send (validation, idempotency
// keys, the acceptance statement and its batch), and package delivery
// delivers it (claim, conversation order, throttle, the sent or failed
// record, requeue).
//
// # Lifecycle
//
// After the sent record, receipts (ApplyReceipt) move an outbound message
// forward only: delivered, read, or failed, never back (a late delivered
// receipt of a read message only fills its delivered_at). Receive stores
// the inbound messages network accounts write to an organization's active
// sender numbers. Every status change can record a webhook event in its
// own transaction (Config.Events).
//
// # Statements
//
// The receipts and inbound messages are named queries (queries/*.sql)
// run through db.Prepared (the one the other stages share), with pgx
// transactions where they change a message, so that an event can be
// recorded with the change. The history (List) is said with bun's builder,
// its values literals in the text, so that each page is planned for its
// filters.
package messages

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/consent"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/jsonenc"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/sqlq"
	"github.com/bizmsg/platform/platform/webhooks"
	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
)

// Message statuses (docs/api.md, §Message lifecycle). An outbound message
// moves queued → sent → delivered → read, only forward, or to failed from
// queued, sent or delivered; an inbound message is received. A scheduled
// send (docs/api.md, §Scheduled sends) waits as scheduled until its
// release makes it queued or failed, or its cancellation canceled.
const (
	StatusScheduled = "scheduled"
	StatusCanceled  = "canceled"
	StatusQueued    = "queued"
	StatusSent      = "sent"
	StatusDelivered = "delivered"
	StatusRead      = "read"
	StatusFailed    = "failed"
	StatusReceived  = "received"
)

// Message directions.
const (
	// DirectionOutbound is a message sent through the API.
	DirectionOutbound = "outbound"
	// DirectionInbound is a message a network account wrote to one of the
	// organization's sender numbers.
	DirectionInbound = "inbound"
)

// Message types.
const (
	TypeText     = "text"
	TypeImage    = "image"
	TypeVoice    = "voice"
	TypeDocument = "document"
	// TypeTemplate is the type of a message sent from a template
	// (docs/api.md, §Templates): its content is the template rendered with
	// the send's variables, and it carries template_id. The network gets it
	// as a text message.
	TypeTemplate = "template"
)

// Error codes of the send path, beyond validation_failed and the sender
// codes of package senders.
const (
	// CodeRecipientUnreachable (422): the lookup rule says the recipient
	// cannot receive; the body's reason_code says why.
	CodeRecipientUnreachable = "recipient_unreachable"
	// CodeDailyLimitExceeded (429 at acceptance; a message's error_code when a
	// lowered limit stops it before delivery).
	CodeDailyLimitExceeded = "daily_limit_exceeded"
	// CodeIdempotencyKeyReused (422): the key was used with another body.
	CodeIdempotencyKeyReused = "idempotency_key_reused"
	// CodeSenderNotActive is a message's error_code when its sender was
	// suspended or rejected before delivery.
	CodeSenderNotActive = senders.CodeSenderNotActive
	// CodeNetworkError is a message's error_code when every delivery attempt
	// failed with a transient network error.
	CodeNetworkError = "network_error"
	// CodeRecipientOptedOut (422): the recipient is on the organization's
	// opt-out list.
	CodeRecipientOptedOut = consent.CodeRecipientOptedOut
	// CodeOutsideServiceWindow (422): a free-form message to a recipient
	// who has not written to the sender within the network's service window.
	CodeOutsideServiceWindow = "outside_service_window"
)

// KeywordRule applies the opt-out keywords to an inbound text message in
// the transaction that stores it (consent.Service).
type KeywordRule interface {
	ApplyKeyword(ctx context.Context, tx pgx.Tx, t db.Tenant, in consent.InboundText) error
}

// Message is one message of an organization, outbound or inbound.
type Message struct {
	ID int64
	// Direction is DirectionOutbound or DirectionInbound.
	Direction string
	// SenderNumberID is the organization's number: the one an outbound
	// message is sent from, or the one an inbound message was written to.
	SenderNumberID int64
	// ToPhone is the phone the message was written to: the recipient's
	// (outbound), or the sender number's (inbound).
	ToPhone string
	// FromPhone is who wrote an inbound message; nil for outbound ones.
	FromPhone *string
	// RecipientUserID is the recipient's network account, known at acceptance.
	RecipientUserID *int64
	// ConversationID and NetworkMessageID are the network's, set on delivery.
	ConversationID   *int64
	NetworkMessageID *int64
	Type             string
	Content          string
	FileName         *string
	FileSize         *int64
	FileType         *string
	Duration         *int
	Status           string
	ErrorCode        *string
	ErrorMessage     *string
	ClientReference  *string
	CreatedAt        time.Time
	SentAt           *time.Time
	DeliveredAt      *time.Time
	ReadAt           *time.Time
	FailedAt         *time.Time
	// ReceivedAt is when the network took an inbound message.
	ReceivedAt *time.Time
	// TemplateID is the template a message of type template was rendered
	// from; nil for other messages. It stays when the template is deleted.
	TemplateID *int64
	// CampaignID is the campaign a message was released for; nil for
	// other messages.
	CampaignID *int64
	// SendAt is when a scheduled send is (or was) due for release; nil for
	// a message sent at once.
	SendAt *time.Time
	// CanceledAt is when a scheduled send was canceled; nil otherwise.
	CanceledAt *time.Time
	// Delivery is the state of the message's delivery job, filled by Get
	// while River keeps the job (nil otherwise, and in lists).
	Delivery *queue.DeliveryReport
}

// MarshalJSON renders the API resource (AppendJSON).
func (m Message) MarshalJSON() ([]byte, error) { return m.AppendJSON(make([]byte, 0, 640)), nil }

// AppendJSON appends the resource of docs/api.md, §Sending (id,
// sender_number_id, recipient_user_id, conversation_id, message_id,
// message_type, content, status, sent_at) plus the request's other fields,
// the outcome and the lifecycle of §Message lifecycle (direction,
// from_phone and the times), timestamps RFC 3339 in UTC to the second and
// null while unset; "delivery" only when Delivery is set. It writes what
// encoding/json would write for the same fields (messages_json_test.go
// checks that), without reflection: every webhook event of a message
// carries it, written in the send path's transactions.
func (m Message) AppendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = jsonenc.Int(b, m.ID)
	b = append(b, `,"sender_number_id":`...)
	b = jsonenc.Int(b, m.SenderNumberID)
	b = append(b, `,"recipient_user_id":`...)
	b = jsonenc.NullInt(b, m.RecipientUserID)
	b = append(b, `,"conversation_id":`...)
	b = jsonenc.NullInt(b, m.ConversationID)
	b = append(b, `,"message_id":`...)
	b = jsonenc.NullInt(b, m.NetworkMessageID)
	b = append(b, `,"message_type":`...)
	b = jsonenc.String(b, m.Type)
	b = append(b, `,"content":`...)
	b = jsonenc.String(b, m.Content)
	b = append(b, `,"status":`...)
	b = jsonenc.String(b, m.Status)
	b = append(b, `,"sent_at":`...)
	b = appendStamp(b, m.SentAt)
	b = append(b, `,"to_phone":`...)
	b = jsonenc.String(b, m.ToPhone)
	b = append(b, `,"file_name":`...)
	b = jsonenc.NullString(b, m.FileName)
	b = append(b, `,"file_size":`...)
	b = jsonenc.NullInt(b, m.FileSize)
	b = append(b, `,"file_type":`...)
	b = jsonenc.NullString(b, m.FileType)
	b = append(b, `,"duration":`...)
	if m.Duration == nil {
		b = append(b, "null"...)
	} else {
		b = jsonenc.Int(b, int64(*m.Duration))
	}
	b = append(b, `,"client_reference":`...)
	b = jsonenc.NullString(b, m.ClientReference)
	b = append(b, `,"error_code":`...)
	b = jsonenc.NullString(b, m.ErrorCode)
	b = append(b, `,"error_message":`...)
	b = jsonenc.NullString(b, m.ErrorMessage)
	b = append(b, `,"created_at":`...)
	b = appendStamp(b, &m.CreatedAt)
	b = append(b, `,"delivered_at":`...)
	b = appendStamp(b, m.DeliveredAt)
	b = append(b, `,"failed_at":`...)
	b = appendStamp(b, m.FailedAt)
	b = append(b, `,"direction":`...)
	b = jsonenc.String(b, m.Direction)
	b = append(b, `,"from_phone":`...)
	b = jsonenc.NullString(b, m.FromPhone)
	b = append(b, `,"read_at":`...)
	b = appendStamp(b, m.ReadAt)
	b = append(b, `,"received_at":`...)
	b = appendStamp(b, m.ReceivedAt)
	b = append(b, `,"template_id":`...)
	b = jsonenc.NullInt(b, m.TemplateID)
	b = append(b, `,"campaign_id":`...)
	b = jsonenc.NullInt(b, m.CampaignID)
	b = append(b, `,"send_at":`...)
	b = appendStamp(b, m.SendAt)
	b = append(b, `,"canceled_at":`...)
	b = appendStamp(b, m.CanceledAt)
	if d := m.Delivery; d != nil {
		// The state of the message's delivery job (GET
		// /api/v1/messages/{id}): attempts made, the last failed
		// attempt's cause in plain words, and when the next is due.
		b = append(b, `,"delivery":{"state":`...)
		b = jsonenc.String(b, d.State)
		b = append(b, `,"attempts":`...)
		b = jsonenc.Int(b, int64(d.Attempts))
		b = append(b, `,"last_error":`...)
		if d.LastError == "" {
			b = append(b, "null"...)
		} else {
			b = jsonenc.String(b, d.LastError)
		}
		b = append(b, `,"last_attempt_at":`...)
		b = appendStamp(b, d.LastAttemptAt)
		b = append(b, `,"next_attempt_at":`...)
		b = appendStamp(b, d.NextAttemptAt)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendStamp appends *t as resources render times (clock.Format), or null
// when t is nil.
func appendStamp(b []byte, t *time.Time) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	return jsonenc.Time(b, clock.Stamp(*t), time.RFC3339)
}

// Config configures a Service.
type Config struct {
	// DB is the database: the history reads it through bun. Required.
	DB *db.DB
	// Prepared runs the statements of receipts, inbound messages and Get
	// (prepared per connection, up to its bound): the one acceptance and
	// delivery use. Required: on the same database as DB.
	Prepared *db.Prepared
	// Jobs reads a message's delivery job for Get: the process's River
	// client. Required.
	Jobs queue.Client
	// Consent applies the opt-out keywords to every inbound text message,
	// in the transaction that stores it. Nil: inbound messages are only
	// stored.
	Consent KeywordRule
	// Events records a webhook event of every status change of a message
	// (Changes.Events): message.delivered, .read and .failed of receipts,
	// message.received of inbound messages. Nil records none.
	Events webhooks.Emitter
	// Clock is the time source of receipts and inbound messages. Default
	// clock.Real{}.
	Clock clock.Clock
	// Logger. Default slog.Default().
	Logger *slog.Logger
	// Routed stores an inbound message as statements Citus routes to the
	// tenant's node (platform/app sets it on a Citus coordinator;
	// docs/scaling.md, §Two-phase commits): the one-statement store's
	// INSERT steps are planned through the coordinator, send their
	// intermediate results to every worker and commit in two phases.
	// Off, one statement stores it (fewer round trips on one server).
	Routed bool
}

// Service implements receipts, inbound messages and the history. It is
// safe for concurrent use.
type Service struct {
	bun     *bun.DB
	prep    *db.Prepared
	q       *sqlq.Queries
	jobs    queue.Client
	changes Changes
	clock   clock.Clock
	log     *slog.Logger
	cfg     Config
}

// New validates cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.DB == nil:
		return nil, errors.New("messages: Config.DB is required")
	case cfg.Prepared == nil:
		return nil, errors.New("messages: Config.Prepared is required")
	case cfg.Jobs == nil:
		return nil, errors.New("messages: Config.Jobs is required")
	}
	defaults.Clock(&cfg.Clock)
	defaults.Logger(&cfg.Logger)
	q, err := loadQueries()
	if err != nil {
		return nil, err
	}
	return &Service{
		bun:     cfg.DB.Bun,
		prep:    cfg.Prepared,
		q:       q,
		jobs:    cfg.Jobs,
		changes: Changes{Prepared: cfg.Prepared, Events: cfg.Events},
		clock:   cfg.Clock,
		log:     cfg.Logger,
		cfg:     cfg,
	}, nil
}

// Reference is the network delivery reference of a message: unique across
// tenants, the same for every attempt.
func Reference(t db.Tenant, id int64) string {
	return t.Schema + ":" + itoa(id)
}
