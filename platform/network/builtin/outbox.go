package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/sqlq"
)

// The kinds of the events of the outbox (network.events.kind).
const (
	eventReceipt = "receipt"
	eventInbound = "inbound"
)

// DefaultDrainLimit is how many events Drain applies at most when it is given
// a limit ≤ 0.
const DefaultDrainLimit = 100

// receiptPayload is the payload of a receipt event: network.Receipt, field
// for field (a conversion), with the keys queries/read.sql writes.
type receiptPayload struct {
	Reference    string    `json:"reference"`
	Status       string    `json:"status"`
	At           time.Time `json:"at"`
	ErrorCode    string    `json:"error_code,omitempty"`
	ErrorMessage string    `json:"error_message,omitempty"`
}

// inboundPayload is the payload of an inbound event: network.Inbound, field
// for field (a conversion).
type inboundPayload struct {
	ID             string `json:"id"`
	FromPhone      string `json:"from_phone"`
	ToPhone        string `json:"to_phone"`
	ConversationID int64  `json:"conversation_id"`
	network.Media
	At time.Time `json:"at"`
}

// Read makes the account of recipientPhone read every message it received
// and has not read yet (only those from the account of senderPhone when it is
// not empty) and returns them in delivery order, now read. Each message is
// read once: its read time is set, and in the same transaction a
// network.ReceiptRead for its reference goes to the outbox (Drain). Messages
// read before are left alone and not returned, so reading again returns only
// what arrived since.
//
// A phone no account holds gives an error wrapping network.ErrNotFound; a
// malformed one an error wrapping phone.ErrInvalid.
func (n *Network) Read(ctx context.Context, recipientPhone, senderPhone string) ([]InboxMessage, error) {
	r, recipient, err := n.phoneAccount(ctx, "phone", recipientPhone, "read: recipient")
	if err != nil {
		return nil, err
	}
	var sender *int64
	if senderPhone != "" {
		_, id, err := n.phoneAccount(ctx, "sender phone", senderPhone, "read: sender")
		if err != nil {
			return nil, err
		}
		sender = &id
	}
	rows, err := n.query(ctx, n.pool, "read", sqlq.Args{"recipient_id": recipient, "sender_id": sender,
		"now": n.clock.Now(), "receipt_kind": eventReceipt, "read_status": network.ReceiptRead})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r, err)
	}
	msgs, err := pgx.CollectRows(rows, scanInbox)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r, err)
	}
	return msgs, nil
}

// sendReferencePrefix begins the reference of a message written with Send.
const sendReferencePrefix = "net:"

// Send makes the account of fromPhone write the text message text to the
// account of toPhone, as a person does in a messaging app, and returns it as
// the recipient's inbox shows it. It goes in the pair's conversation (the one
// of the messages Deliver carries between them, whoever wrote first), is
// delivered at once, and its reference is the network's own,
// "net:<message id>". In the same transaction a network.Inbound goes to the
// outbox (Drain), with the message id as its ID: to an organization's sender
// number, that is an inbound message for the platform.
//
// The recipient must be able to receive from the writer, as for Deliver:
// refusals are *network.PermanentError (wrapped) with the codes
// invalid_message (empty text), sender_not_registered, not_registered,
// self, phone_unverified, receiving_disabled and blocked_sender. A malformed
// phone gives an error wrapping phone.ErrInvalid.
func (n *Network) Send(ctx context.Context, fromPhone, toPhone, text string) (InboxMessage, error) {
	from, err := normalize("sender phone", fromPhone)
	if err != nil {
		return InboxMessage{}, err
	}
	to, err := normalize("recipient phone", toPhone)
	if err != nil {
		return InboxMessage{}, err
	}
	fail := func(err error) (InboxMessage, error) {
		return InboxMessage{}, fmt.Errorf("send from %s to %s: %w", from, to, err)
	}
	if text == "" {
		return fail(permanent(network.CodeInvalidMessage, "the text is empty"))
	}
	senderID, recipient, err := n.parties(ctx, from, to)
	if err != nil {
		return fail(err)
	}
	if err := refusal(senderID, recipient); err != nil {
		return fail(err)
	}
	now := n.clock.Now()
	low, high := min(senderID, recipient.ID), max(senderID, recipient.ID)
	var conv int64
	for try := 0; ; try++ {
		err := n.queryRow(ctx, n.pool, "conversation", sqlq.Args{"low": low, "high": high, "now": now}).Scan(&conv)
		if err == nil {
			break
		}
		if !errors.Is(err, pgx.ErrNoRows) || try > 0 {
			return fail(fmt.Errorf("conversation: %w", err))
		}
	}
	rows, err := n.query(ctx, n.pool, "send", sqlq.Args{"conversation_id": conv, "from_id": senderID,
		"to_id": recipient.ID, "text": text, "now": now, "from_phone": from, "to_phone": to,
		"prefix": sendReferencePrefix, "inbound_kind": eventInbound})
	if err != nil {
		return fail(err)
	}
	m, err := pgx.CollectExactlyOneRow(rows, scanInbox)
	if err != nil {
		return fail(err)
	}
	return m, nil
}

// outboxEvent is one row of the outbox.
type outboxEvent struct {
	id      int64
	kind    string
	payload []byte
}

// Drain applies to sink, in id order, up to limit (DefaultDrainLimit when
// limit ≤ 0) events of the outbox not yet processed, marks each processed
// once sink returned nil for it, and returns how many it marked. It stops at
// the first event sink fails (or that does not decode) and returns that error
// wrapped, with the events before it marked: that event and the following
// ones are offered again by the next Drain.
//
// Drains may run at once, in several processes: each locks the events it
// takes (FOR UPDATE SKIP LOCKED) until it has marked them, and the others
// skip them, so an event is never applied by two Drains at once. Order holds
// within one Drain; across concurrent Drains an event may be applied before
// an earlier one another Drain holds. An event can still be applied twice
// (the marks are lost when the database fails before they commit), which is
// why a Sink must be idempotent.
func (n *Network) Drain(ctx context.Context, sink network.Sink, limit int) (int, error) {
	defaults.Positive(&limit, DefaultDrainLimit)
	tx, err := n.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("drain: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := n.query(ctx, tx, "drain_take", sqlq.Args{"limit": limit})
	if err != nil {
		return 0, fmt.Errorf("drain: %w", err)
	}
	events, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (outboxEvent, error) {
		var e outboxEvent
		err := row.Scan(&e.id, &e.kind, &e.payload)
		return e, err
	})
	if err != nil {
		return 0, fmt.Errorf("drain: %w", err)
	}
	var done []int64
	var failed error
	for _, e := range events {
		if err := e.apply(ctx, sink); err != nil {
			failed = fmt.Errorf("drain: event %d (%s): %w", e.id, e.kind, err)
			break
		}
		done = append(done, e.id)
	}
	if len(done) > 0 {
		// What sink applied is marked even when ctx ended meanwhile (a
		// stopping worker), so that it is not offered again needlessly.
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		rows, err := n.query(mctx, tx, "drain_mark", sqlq.Args{"ids": done, "now": n.clock.Now()})
		if err == nil {
			rows.Close()
			err = rows.Err()
		}
		if err != nil {
			return 0, fmt.Errorf("drain: mark %d events processed: %w", len(done), err)
		}
		if err := tx.Commit(mctx); err != nil {
			return 0, fmt.Errorf("drain: mark %d events processed: %w", len(done), err)
		}
	}
	return len(done), failed
}

// apply gives the event to sink.
func (e outboxEvent) apply(ctx context.Context, sink network.Sink) error {
	switch e.kind {
	case eventReceipt:
		var p receiptPayload
		if err := json.Unmarshal(e.payload, &p); err != nil {
			return fmt.Errorf("decode payload: %w", err)
		}
		p.At = p.At.UTC()
		return sink.Receipt(ctx, network.Receipt(p))
	case eventInbound:
		var p inboundPayload
		if err := json.Unmarshal(e.payload, &p); err != nil {
			return fmt.Errorf("decode payload: %w", err)
		}
		p.At = p.At.UTC()
		return sink.Inbound(ctx, network.Inbound(p))
	case eventTemplate:
		var p templatePayload
		if err := json.Unmarshal(e.payload, &p); err != nil {
			return fmt.Errorf("decode payload: %w", err)
		}
		p.At = p.At.UTC()
		return sink.TemplateReviewed(ctx, network.TemplateVerdict(p))
	default:
		return fmt.Errorf("unknown kind %q", e.kind)
	}
}
