// Package messages is the message service shared by the Tenant API, the
// Central API (dashboard) and the delivery worker: validation of a send, the
// acceptance statement, idempotency keys, delivery, and history reads.
//
// # Acceptance
//
// A send is validated in full first (every field error at once, nothing
// touched). Then: an Idempotency-Key already answered replays its answer;
// the recipient is checked on the network (lookup.Check, the rule the
// contacts lookup uses), outside any transaction so that no database
// connection is held while the network answers. The lookup needs the
// sender's phone: the request's, or the one this process remembers for the
// sender's id (a sender's phone never changes), or else the sender's row,
// read and checked first. Then one transaction accepts the message: one
// statement (acceptSQL) and River's insert of its delivery job:
//
//  1. the sender, which must be active (the sender errors are worded from
//     its row when it is not: sender_not_found, sender_not_active,
//     sender_owner_unverified);
//  2. the daily limit: INSERT ... ON CONFLICT DO UPDATE SET used = used + 1
//     WHERE used < limit, so concurrent sends never pass the limit (429
//     daily_limit_exceeded when it refuses);
//  3. the message row (queued), inserted only when the steps before it
//     succeeded, and then its delivery job (River's InsertManyFastTx, in
//     the same transaction: no message without its job, no job without
//     its message).
//
// Sends of one tenant that arrive while its earlier ones are in the database
// share one transaction (acceptBatch, acceptBatchSQL): each sender's counter is
// raised once for all its messages, all or none; whatever that statement
// does not accept is decided again by the one-message statement.
//
// The sender row is not locked: a suspension that commits while a send is
// being accepted may let that one message in, and its delivery then fails it
// sender_not_active (the delivery re-checks the sender). With an
// Idempotency-Key the same statements run in a transaction that first claims
// the key (so concurrent repeats of one key queue on its unique index and the
// later ones read the answer) and then stores the answer under it.
//
// # Delivery
//
// DeliverMessage runs in the River worker: it claims the message, unless an
// earlier message of its conversation is still queued (a lowered daily
// limit is honoured for messages not yet delivered), takes a token from the
// sender's bucket (waiting briefly, or snoozing once for exactly the delay),
// delivers with the reference "<schema>:<message id>" (so a job run twice
// delivers once), and records the outcome with the day's status counters;
// then it carries the conversation on to its next message (order.go). The
// jobs of one tenant that run at the same time do this together
// (deliverBatch): one claim statement, one network batch, one sent record.
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
// The statements every message runs (acceptance, alone or batched;
// idempotency keys; the delivery claim; the sent record) take $n arguments
// and go through
// db.Prepared, which keeps them prepared on each pool connection up to a
// bound, so that Postgres parses, analyses and plans them once per
// connection instead of at every run. Their texts name the tenant's schema,
// so each tenant has texts of its own. The rarer paths (claimLocked,
// failures, receipts, inbound messages, the history) go through it too,
// with pgx transactions where they change a message, so that an event can be
// recorded with the change. The history (List) runs on the pool
// directly, on the simple protocol so that each page is planned for its
// filters.
package messages

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/bizmsg/platform/platform/batch"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/consent"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/jsonenc"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/throttle"
	"github.com/bizmsg/platform/platform/webhooks"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Message statuses (docs/api.md, §Message lifecycle). An outbound message
// moves queued → sent → delivered → read, only forward, or to failed from
// queued, sent or delivered; an inbound message is received.
const (
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

// Senders is what the service needs of the sender-number service;
// *senders.Service is one.
type Senders interface {
	Resolve(ctx context.Context, t db.Tenant, ref senders.SenderRef) (senders.Sender, error)
}

// Config configures a Service.
type Config struct {
	// DB is the database. Required.
	DB *db.DB
	// Prepared runs the statements of acceptance and delivery's claim and
	// sent record (prepared per connection, up to its bound). Required: on the same
	// database as DB.
	Prepared *db.Prepared
	// Senders resolves sender numbers for the send path's errors. Required.
	Senders Senders
	// Network is the messaging network. Required.
	Network network.Network
	// Jobs inserts each accepted message's delivery job in its acceptance
	// transaction, and reads it for Get: the process's River client.
	// Required.
	Jobs queue.Client
	// SenderCache bounds how many senders the process remembers the phone
	// and throttle limit of (see senderCache). Default 100,000.
	SenderCache int
	// Throttle paces deliveries per sender. Default: a throttle.Local.
	Throttle throttle.Limiter
	// SenderRate and SenderBurst are the throttle of organizations without
	// their own (central.organizations.sender_rate/sender_burst). Defaults
	// 20/s and 40 (docs/api.md, §Delivery).
	SenderRate  float64
	SenderBurst int
	// AcceptBatch bounds the acceptance batches of a tenant (see
	// acceptBatch): sends without an Idempotency-Key that arrive while the
	// tenant's earlier ones are being stored share one statement. Defaults
	// 64 and 2 (batch.Config).
	AcceptBatch batch.Config
	// DeliveryBatch bounds the delivery batches of a tenant (see
	// deliverBatch): at most MaxSize jobs each, MaxInFlight at once per
	// tenant. Defaults 64 and 2 (batch.Config).
	DeliveryBatch batch.Config
	// MaxInlineWait is how long a delivery job's run may wait for throttle
	// tokens and go on with its conversation's next messages (order.go): a
	// token due later snoozes the job for exactly the delay, and past it the
	// job hands its conversation's next message to a new job. Default 1 s
	// (queue.DeliveryThrottleWait, part of the run's bound).
	MaxInlineWait time.Duration
	// ClaimLease is how long a delivery job's claim of a message holds it
	// against other jobs' claims: the longest a live job's run lasts, so
	// that a job killed mid-delivery is taken over once it has passed (its
	// own rescued run takes it back at once). Default 10 s
	// (queue.Config.DeliveryRescueAfter's default).
	ClaimLease time.Duration
	// OrderWindow bounds how long a message whose delivery keeps failing
	// holds the later messages of its conversation (a sender number and a
	// recipient, docs/api.md §Delivery order) back: from its first transient
	// failure (failing_since), so that a message stuck queued (its attempts
	// spread over a long outage) delays the others that long at most, while
	// a message that merely waits (a slow queue, a throttled sender) always
	// keeps its place. Default 10 minutes: the first nine retries of a
	// transient network failure (1 s doubling) fit in it.
	OrderWindow time.Duration
	// OrderWait is how long the job of a message that waits for an earlier
	// one of its conversation, or for another job's claim, snoozes before it
	// looks again. The job delivering the conversation carries it on
	// (order.go), so this is only the bound on a rare race and on the
	// take-over of a conversation whose job was lost. Default 2 s.
	OrderWait time.Duration
	// IdempotencyTTL is how long an Idempotency-Key is remembered. Default 24 h.
	IdempotencyTTL time.Duration
	// ServiceWindow is the network's service window (docs/api.md, §Service
	// window): with one, a message that is not a template is accepted only
	// when the recipient wrote to the sender within it. 0 (the default): no
	// window.
	ServiceWindow time.Duration
	// Templates resolves the template of a send of type template. Nil:
	// such sends fail.
	Templates Templates
	// Consent applies the opt-out keywords to every inbound text message,
	// in the transaction that stores it. Nil: inbound messages are only
	// stored.
	Consent KeywordRule
	// Events records a webhook event of every status change of a message
	// (message.sent, .delivered, .read, .failed, .received) in the
	// transaction of the change, so an event exists if and only if its
	// change committed: once per transaction with every event of that
	// transaction, in the order the changes happened; an error rolls the
	// change back. Each event's Key is "message:<id>" and its Data the
	// Message as the API shows it. Nil records none, and the paths that
	// change a message then run as they would without events: no
	// transaction of their own, no resource built.
	Events webhooks.Emitter
	// Clock is the time source for acceptance (the UTC day of the daily limit)
	// and delivery times. Default clock.Real{}.
	Clock clock.Clock
	// Logger. Default slog.Default().
	Logger *slog.Logger
}

// Service implements sending, delivery and history. It is safe for
// concurrent use.
type Service struct {
	pool     *pgxpool.Pool
	prep     *db.Prepared
	senders  Senders
	net      network.Network
	jobs     queue.Client
	known    *senderCache
	throttle throttle.Limiter
	events   webhooks.Emitter
	// acceptances batches the sends of each tenant (acceptBatch), and
	// deliveries its deliveries (deliverBatch).
	acceptances *batch.Batcher[db.Tenant, acceptance, accepted]
	deliveries  *batch.Batcher[db.Tenant, pendingDelivery, delivered]
	clock       clock.Clock
	log         *slog.Logger
	cfg         Config
}

// New validates cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.DB == nil:
		return nil, errors.New("messages: Config.DB is required")
	case cfg.Prepared == nil:
		return nil, errors.New("messages: Config.Prepared is required")
	case cfg.Senders == nil:
		return nil, errors.New("messages: Config.Senders is required")
	case cfg.Network == nil:
		return nil, errors.New("messages: Config.Network is required")
	case cfg.Jobs == nil:
		return nil, errors.New("messages: Config.Jobs is required")
	}
	defaults.Positive(&cfg.SenderCache, 100_000)
	if cfg.Throttle == nil {
		cfg.Throttle = throttle.NewLocal(throttle.Config{})
	}
	defaults.Positive(&cfg.SenderRate, 20)
	defaults.Positive(&cfg.SenderBurst, 40)
	defaults.Positive(&cfg.MaxInlineWait, time.Second)
	defaults.Positive(&cfg.OrderWindow, 10*time.Minute)
	defaults.Positive(&cfg.ClaimLease, 10*time.Second)
	defaults.Positive(&cfg.OrderWait, 2*time.Second)
	defaults.Positive(&cfg.IdempotencyTTL, 24*time.Hour)
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Service{
		pool:     cfg.DB.Pool,
		prep:     cfg.Prepared,
		senders:  cfg.Senders,
		net:      cfg.Network,
		jobs:     cfg.Jobs,
		known:    newSenderCache(cfg.SenderCache),
		throttle: cfg.Throttle,
		events:   cfg.Events,
		clock:    cfg.Clock,
		log:      cfg.Logger,
		cfg:      cfg,
	}
	s.acceptances = batch.New(s.acceptBatch, cfg.AcceptBatch)
	s.deliveries = batch.New(s.deliverBatch, cfg.DeliveryBatch)
	return s, nil
}

// Reference is the network delivery reference of a message: unique across
// tenants, the same for every attempt.
func Reference(t db.Tenant, id int64) string {
	return t.Schema + ":" + itoa(id)
}
