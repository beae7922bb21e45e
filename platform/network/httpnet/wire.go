// Package httpnet is the messaging network over HTTP (NETWORK=http): Client
// implements network.Network against an external network's base URL, and
// Handler serves the same protocol over any network.Network (so the built-in
// network can be exposed to other processes, and the Client has a real peer in
// tests). Every request, in both directions, is signed with a shared secret
// (Sign, Verify). The network reports what happens later (an account
// verified; a message delivered, failed or read; a message an account wrote)
// as signed events posted to the platform (Event, Decode), which Decoded
// turns into the network.Receipt and network.Inbound every network reports. The wire protocol is docs/network-http.md.
package httpnet

import (
	"time"

	"github.com/bizmsg/platform/platform/network"
)

// Paths of the protocol, relative to the network's base URL.
const (
	// PathAccounts: GET ?phone=P[&sender_phone=S] → account, 404 not_registered.
	PathAccounts = "/v1/accounts"
	// PathMessages: POST a message → its delivery, 422 refusal.
	PathMessages = "/v1/messages"
)

// MaxBodyBytes bounds every request and response body of the protocol.
const MaxBodyBytes = 1 << 20

// Error codes of the protocol beyond the network.Code* refusal codes.
const (
	// CodeInvalidSignature (401): the signature or timestamp is wrong.
	CodeInvalidSignature = "invalid_signature"
	// CodeMalformedRequest (400): the request is not what the endpoint reads.
	CodeMalformedRequest = "malformed_request"
	// CodeNotFound (404): no such endpoint.
	CodeNotFound = "not_found"
	// CodeMethodNotAllowed (405).
	CodeMethodNotAllowed = "method_not_allowed"
	// CodePayloadTooLarge (413): the body is over MaxBodyBytes.
	CodePayloadTooLarge = "payload_too_large"
	// CodeUnavailable (503): the network failed; retry.
	CodeUnavailable = "unavailable"
)

// accountJSON is an account on the wire.
type accountJSON struct {
	ID               int64      `json:"id"`
	Phone            string     `json:"phone"`
	Verified         bool       `json:"verified"`
	VerifiedAt       *time.Time `json:"verified_at"`
	PhoneVerified    bool       `json:"phone_verified"`
	PhoneVerifiedAt  *time.Time `json:"phone_verified_at"`
	ReceivingEnabled bool       `json:"receiving_enabled"`
	BlocksSender     bool       `json:"blocks_sender"`
}

// accountToJSON and account convert between the two forms, timestamps in
// UTC. accountJSON has network.Account's fields in its order, so these are
// conversions: a field added to one and not the other stops the build.
func accountToJSON(a network.Account) accountJSON { return accountJSON(accountUTC(a)) }

func (a accountJSON) account() network.Account { return accountUTC(network.Account(a)) }

func accountUTC(a network.Account) network.Account {
	a.VerifiedAt, a.PhoneVerifiedAt = utc(a.VerifiedAt), utc(a.PhoneVerifiedAt)
	return a
}

// messageJSON is a message to deliver on the wire.
type messageJSON struct {
	Reference string `json:"reference"`
	FromPhone string `json:"from_phone,omitempty"`
	ToPhone   string `json:"to_phone"`
	network.Media
	// Template: a template message's template and values (its Type is
	// text, its Content the rendered text).
	Template *network.MessageTemplate `json:"template,omitempty"`
}

func messageToJSON(m network.Message) messageJSON {
	return messageJSON{
		Reference: m.Reference, FromPhone: m.FromPhone, ToPhone: m.ToPhone, Media: m.Media, Template: m.Template,
	}
}

func (m messageJSON) message() network.Message {
	return network.Message{
		Reference: m.Reference, FromPhone: m.FromPhone, ToPhone: m.ToPhone, Media: m.Media, Template: m.Template,
	}
}

// deliveryJSON is a delivery on the wire.
type deliveryJSON struct {
	MessageID      int64     `json:"message_id"`
	ConversationID int64     `json:"conversation_id"`
	RecipientID    int64     `json:"recipient_id"`
	DeliveredAt    time.Time `json:"delivered_at"`
}

// errorJSON is every error response body of the protocol.
type errorJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
