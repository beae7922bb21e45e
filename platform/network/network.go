// Package network is everything the platform asks of the messaging network,
// behind one interface: look up an account by phone, deliver a message from a
// sender account to a recipient exactly once per reference, and tell whether an
// account is verified. Implementations: the built-in network (package
// network/builtin, tables in the `network` schema) and, later, an HTTP adapter
// for an external network.
package network

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound means no account holds the phone.
var ErrNotFound = errors.New("network: no account for this phone")

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

// Message is one message to deliver.
type Message struct {
	// Reference is the caller's idempotency reference: delivering a message
	// with a reference already delivered returns the first Delivery and creates
	// nothing. The platform uses "<tenant schema>:<message id>" and "otp:...".
	Reference string
	FromPhone string
	ToPhone   string
	// Type is text, image, voice or document.
	Type     string
	Content  string
	FileName string
	FileSize int64
	FileType string
	Duration int
}

// Delivery is the network's record of a delivered message.
type Delivery struct {
	MessageID      int64
	ConversationID int64
	RecipientID    int64
	DeliveredAt    time.Time
}

// PermanentError is a refusal that retrying will not change (no such
// recipient, recipient not receiving, sender blocked...). Any other error from
// Deliver is transient and worth retrying.
type PermanentError struct {
	// Code is a machine code such as "not_registered" or "receiving_disabled".
	Code    string
	Message string
}

func (e *PermanentError) Error() string { return "network: " + e.Code + ": " + e.Message }

// IsPermanent reports whether err is a PermanentError.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// Network is the messaging network as the platform uses it.
type Network interface {
	// Lookup returns the account holding phone, or ErrNotFound. When senderPhone
	// is not empty, Account.BlocksSender tells whether the account blocks it.
	Lookup(ctx context.Context, phone, senderPhone string) (Account, error)
	// Deliver delivers msg from the account of msg.FromPhone to the account of
	// msg.ToPhone, at most once per msg.Reference.
	Deliver(ctx context.Context, msg Message) (Delivery, error)
	// Verified reports whether the account holding phone is verified
	// (ErrNotFound when there is none).
	Verified(ctx context.Context, phone string) (bool, error)
}
