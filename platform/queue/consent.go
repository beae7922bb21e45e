package queue

import "github.com/riverqueue/river"

// ConsentReplyArgs is the job that answers an opt-out or opt-in keyword
// with the organization's confirmation text, from the number the keyword
// came to (platform/consent). It is inserted in the transaction that stores
// the inbound message.
type ConsentReplyArgs struct {
	TenantRef
	// InboundID is the network's id of the keyword message: the reply's
	// network reference derives from it.
	InboundID string `json:"inbound_id"`
	// From is the organization's number, To the writer, Text the reply.
	From string `json:"from"`
	To   string `json:"to"`
	Text string `json:"text"`
}

// Kind names the job in River.
func (ConsentReplyArgs) Kind() string { return "consent_reply" }

// Subject names what the job works on, in its errors.
func (a ConsentReplyArgs) Subject() string { return "confirmation in " + a.Schema }

// InsertOpts bounds retries: a confirmation hours late says little.
func (ConsentReplyArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 10} }
