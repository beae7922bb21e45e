// Package network is everything the platform asks of the messaging network,
// behind one interface: look up an account by phone, deliver a message from a
// sender account to a recipient exactly once per reference, and tell whether an
// account is verified. Implementations: the built-in network (package
// network/builtin, tables in the `network` schema) and the HTTP adapter for an
// external network (package network/httpnet). What happens to a message
// afterwards (delivered, read, failed) and the messages accounts write come
// back as Receipts and Inbounds, given to a Sink.
package network

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrNotFound means no account holds the phone.
var ErrNotFound = errors.New("network: no account for this phone")

// Codes shared by lookup results (reason_code, docs/api.md §Lookup) and by
// PermanentError.Code, so a send refused by the network and a lookup that
// predicted it say the same thing.
const (
	// CodeOK: the recipient can receive from the sender.
	CodeOK = "ok"
	// CodeNotRegistered: no account holds the recipient phone.
	CodeNotRegistered = "not_registered"
	// CodePhoneUnverified: the recipient account's phone is not verified.
	CodePhoneUnverified = "phone_unverified"
	// CodeReceivingDisabled: the recipient account does not accept messages.
	CodeReceivingDisabled = "receiving_disabled"
	// CodeBlockedSender: the recipient blocks the sender.
	CodeBlockedSender = "blocked_sender"
	// CodeSelf: the recipient is the sender.
	CodeSelf = "self"
	// CodeSenderNotRegistered: no account holds the sender phone.
	CodeSenderNotRegistered = "sender_not_registered"
	// CodeInvalidPhone: a phone of the message is not a valid E.164 number.
	CodeInvalidPhone = "invalid_phone"
	// CodeInvalidMessage: the message itself is unacceptable (no reference,
	// unknown type).
	CodeInvalidMessage = "invalid_message"
	// CodeReferenceReused: the reference was already used for a message
	// between other accounts.
	CodeReferenceReused = "reference_reused"
)

// Account is what the network tells about one account.
type Account struct {
	ID    int64
	Phone string
	// Verified: the account owner is verified on the network.
	Verified   bool
	VerifiedAt *time.Time
	// PhoneVerified: the account's phone number is verified.
	PhoneVerified   bool
	PhoneVerifiedAt *time.Time
	// ReceivingEnabled: the account accepts messages.
	ReceivingEnabled bool
	// BlocksSender is set by Lookup when it was given a sender phone and this
	// account blocks that sender.
	BlocksSender bool
}

// ReasonCode tells whether the account can receive (from the sender given to
// Lookup): CodeOK, or the first reason it cannot, checked in this order:
// CodePhoneUnverified, CodeReceivingDisabled, CodeBlockedSender. The caller
// decides CodeNotRegistered (ErrNotFound) and CodeSelf.
func (a Account) ReasonCode() string {
	switch {
	case !a.PhoneVerified:
		return CodePhoneUnverified
	case !a.ReceivingEnabled:
		return CodeReceivingDisabled
	case a.BlocksSender:
		return CodeBlockedSender
	default:
		return CodeOK
	}
}

// Media is a message's content as the network carries it, the same in a
// message delivered, one written to an account and their JSON forms: Type
// is text, image, voice or document, Content the text or the media's URL;
// FileName, FileSize (bytes), FileType (MIME) and Duration (seconds,
// voice) describe media and are empty for text.
type Media struct {
	Type     string `json:"type"`
	Content  string `json:"content"`
	FileName string `json:"file_name,omitempty"`
	FileSize int64  `json:"file_size,omitempty"`
	FileType string `json:"file_type,omitempty"`
	Duration int    `json:"duration,omitempty"`
}

// Message is one message to deliver.
type Message struct {
	// Reference is the caller's idempotency reference: delivering a message
	// with a reference already delivered returns the first Delivery and creates
	// nothing. The platform uses "<tenant schema>:<message id>" and "otp:...".
	Reference string
	// FromPhone is the sender account's phone; "" sends from the platform's own
	// service account (used for OTP messages).
	FromPhone string
	ToPhone   string
	Media
	// Template is the template a message was rendered from, with the
	// send's values; nil for other messages. Type is then text and Content
	// the rendered text: a network that delivers text only ignores it, one
	// that delivers templates as such (the HTTP adapter passes it on) uses
	// it.
	Template *MessageTemplate
}

// MessageTemplate names the template of a message and the values of its
// variables.
type MessageTemplate struct {
	Name      string            `json:"name"`
	Language  string            `json:"language"`
	Variables map[string]string `json:"variables"`
}

// Delivery is the network's record of a delivered message.
type Delivery struct {
	MessageID      int64
	ConversationID int64
	RecipientID    int64
	// DeliveredAt is when the network accepted the message for the
	// recipient; when Delivered is set, also when it reached the recipient.
	DeliveredAt time.Time
	// Delivered: the network confirms the message reached the recipient at
	// DeliveredAt, so no ReceiptDelivered will follow for it. The built-in
	// network stores the message in the recipient's inbox and sets it
	// always; the HTTP adapter never does (its receipts come as events).
	Delivered bool
}

// The statuses of a Receipt: what happened to a message after the network
// accepted it (queued → sent → delivered → read, or failed).
const (
	// ReceiptDelivered: the message reached the recipient.
	ReceiptDelivered = "delivered"
	// ReceiptRead: the recipient read the message.
	ReceiptRead = "read"
	// ReceiptFailed: the message could not reach the recipient.
	ReceiptFailed = "failed"
)

// Receipt is the network's word on a message it accepted.
type Receipt struct {
	// Reference is the reference Deliver was given (Message.Reference), or
	// the network's own for a message that did not come through Deliver:
	// receivers ignore references they do not know.
	Reference string
	// Status is ReceiptDelivered, ReceiptRead or ReceiptFailed.
	Status string
	// At is when it happened, in UTC.
	At time.Time
	// ErrorCode and ErrorMessage say why the message failed (ReceiptFailed
	// only); empty when the network did not say.
	ErrorCode    string
	ErrorMessage string
}

// Inbound is a message an account wrote to another account (for the
// platform, to one of an organization's sender numbers).
type Inbound struct {
	// ID is the network's id of the message, unique on the network: the
	// receiver's idempotency key (an Inbound may be reported twice).
	ID string
	// FromPhone is the writer's phone, ToPhone the recipient's (E.164).
	FromPhone string
	ToPhone   string
	// ConversationID is the network's conversation of the pair: the same as
	// Delivery.ConversationID of messages between the two accounts.
	ConversationID int64
	Media
	// At is when the message was written (sent), in UTC.
	At time.Time
}

// Sink receives what the network reports: receipts of messages it accepted
// and messages written to accounts. Implementations must be idempotent (an
// event may come twice) and must return an error only when the event should
// be offered again later; an event they cannot use (an unknown reference, a
// phone that is nobody's) is a nil error.
type Sink interface {
	// Receipt applies a receipt.
	Receipt(ctx context.Context, r Receipt) error
	// Inbound applies a message written to an account.
	Inbound(ctx context.Context, m Inbound) error
	// TemplateReviewed applies the network's verdict on a template
	// submitted with SubmitTemplate.
	TemplateReviewed(ctx context.Context, v TemplateVerdict) error
}

// Template is a message template submitted for review
// (docs/api.md, §Templates).
type Template struct {
	// Reference is the platform's reference of the template,
	// "<tenant schema>:template:<id>": the verdict names it.
	Reference string
	Name      string
	// Language is a BCP 47 tag written with _ (en, en_US).
	Language string
	// Category is marketing, utility or authentication.
	Category string
	// Header and Footer are "" when the template has none. Variables are
	// written {{1}} or {{name}}.
	Header string
	Body   string
	Footer string
	// Examples maps each variable to an example value.
	Examples map[string]string
}

// The statuses of a TemplateVerdict.
const (
	TemplateApproved = "approved"
	TemplateRejected = "rejected"
	TemplatePaused   = "paused"
	TemplateDisabled = "disabled"
)

// TemplateVerdict is the network's word on a submitted template: its
// first review (approved or rejected, with a reason), or a later change
// (paused, disabled, approved again).
type TemplateVerdict struct {
	// Reference is Template.Reference.
	Reference string
	// Status is one of the Template* constants.
	Status string
	// Reason says why the template was rejected (or paused, disabled);
	// "" when the network did not say.
	Reason string
	// At is when the network decided, in UTC.
	At time.Time
}

// PermanentError is a refusal that retrying will not change (no such
// recipient, recipient not receiving, sender blocked...). Any other error from
// Deliver is transient and worth retrying.
type PermanentError struct {
	// Code is a machine code, one of the Code* constants.
	Code    string
	Message string
}

func (e *PermanentError) Error() string { return "network: " + e.Code + ": " + e.Message }

// IsPermanent reports whether err is a PermanentError.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// TransientError is a failure of the network to answer (unreachable, a
// timeout, an error of its own) that a later attempt may not meet.
type TransientError struct{ Err error }

func (e *TransientError) Error() string { return e.Err.Error() }
func (e *TransientError) Unwrap() error { return e.Err }

// Transient marks err, a failure of a network call that is not a refusal,
// as the network's (IsTransient).
func Transient(err error) error { return &TransientError{Err: err} }

// IsTransient reports whether err is marked by Transient.
func IsTransient(err error) bool {
	var t *TransientError
	return errors.As(err, &t)
}

// PlatformError is a failure of the platform's own that a call to the
// network met: the built-in network keeps its accounts in the platform's
// database, so its failing to answer is that database failing, not a
// network. Callers answer it as any failure of the platform (503
// service_unavailable when the database is unavailable, docs/api.md,
// §Status codes), never as the network's (network_unavailable).
type PlatformError struct{ Err error }

func (e *PlatformError) Error() string { return e.Err.Error() }
func (e *PlatformError) Unwrap() error { return e.Err }

// Platform marks err, a failure of the platform met while asking the
// network, as the platform's (IsPlatform).
func Platform(err error) error { return &PlatformError{Err: err} }

// IsPlatform reports whether err is marked by Platform.
func IsPlatform(err error) bool {
	var p *PlatformError
	return errors.As(err, &p)
}

// Network is the messaging network as the platform uses it.
type Network interface {
	// Lookup returns the account holding phone, or an error wrapping
	// ErrNotFound (test with errors.Is). When senderPhone is not empty,
	// Account.BlocksSender tells whether the account blocks it.
	Lookup(ctx context.Context, phone, senderPhone string) (Account, error)
	// Deliver delivers msg from the account of msg.FromPhone to the account of
	// msg.ToPhone, at most once per msg.Reference: a repeat returns the first
	// Delivery, even when the recipient has changed since. A refusal is a
	// *PermanentError; any other error is transient.
	Deliver(ctx context.Context, msg Message) (Delivery, error)
	// Verified reports whether the account holding phone is verified
	// (an error wrapping ErrNotFound when there is none).
	Verified(ctx context.Context, phone string) (bool, error)
	// SubmitTemplate submits tpl for review. The verdict comes later, to
	// the Sink (TemplateReviewed): the built-in network's within seconds,
	// an external network's when it has decided. Submitting a reference
	// again is harmless (at most a repeated verdict). A refusal to take
	// the template at all is a *PermanentError; any other error is
	// transient.
	SubmitTemplate(ctx context.Context, tpl Template) error
}

// Result is the outcome of delivering one message of a batch: what Deliver
// would have returned for it.
type Result struct {
	Delivery Delivery
	Err      error
}

// BatchDeliverer is a Network that delivers several messages in fewer round
// trips than one Deliver each. It is optional: the platform asks for it with
// a type assertion (DeliverAll), so a wrapper that embeds a Network and
// overrides Deliver (a test's fault injection) is never bypassed.
type BatchDeliverer interface {
	// DeliverBatch delivers each message exactly as Deliver would, with the
	// same refusals, repeats and errors, and returns one Result per message,
	// in order. An error that stops the whole batch (the database gone) is
	// every remaining message's Err.
	DeliverBatch(ctx context.Context, msgs []Message) []Result
}

// DeliverAll delivers msgs and returns one Result per message, in order:
// with n's DeliverBatch when n is a BatchDeliverer, else with Deliver, up to
// parallel calls at once (at least one).
func DeliverAll(ctx context.Context, n Network, msgs []Message, parallel int) []Result {
	if b, ok := n.(BatchDeliverer); ok {
		return b.DeliverBatch(ctx, msgs)
	}
	out := make([]Result, len(msgs))
	parallel = max(1, min(parallel, len(msgs)))
	next := make(chan int)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i].Delivery, out[i].Err = n.Deliver(ctx, msgs[i])
			}
		}()
	}
	for i := range msgs {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}
