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
// for field (a conversion), with the keys readSQL writes.
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

// readSQL marks read ($3) the unread messages of the account $1, from the
// account $2 only when it is not NULL, and writes a read receipt to the
// outbox for each, in one statement (one transaction). It returns the
// messages read, inboxColumns, in delivery order.
//
// A message two Reads race for is read by one: the second waits for the
// first's row lock, then finds read_at set and skips it.
const readSQL = `WITH r AS (
	  UPDATE network.messages
	     SET read_at = $3
	   WHERE to_account_id = $1 AND ($2::bigint IS NULL OR from_account_id = $2) AND read_at IS NULL
	  RETURNING *),
	ev AS (
	  INSERT INTO network.events (kind, payload, created_at)
	  SELECT '` + eventReceipt + `', jsonb_build_object('reference', r.reference, 'status', '` + network.ReceiptRead + `',
	                            'at', r.read_at), $3
	    FROM r ORDER BY r.id)
	SELECT ` + inboxColumns + `
	  FROM r m
	  JOIN network.accounts f ON f.id = m.from_account_id
	  JOIN network.accounts t ON t.id = m.to_account_id
	 ORDER BY m.id`

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
	rows, err := n.pool.Query(ctx, readSQL, recipient, sender, n.clock.Now())
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r, err)
	}
	msgs, err := pgx.CollectRows(rows, scanInbox)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r, err)
	}
	return msgs, nil
}

// sendSQL stores a text message written with Send, in one statement (one
// transaction), with the network's own reference "net:<message id>": the
// message from the account $2 to the account $3 in the conversation $1, text
// $4, written (and delivered) at $5, and the inbound event for it, whose
// phones are $6 and $7. It returns inboxColumns of the message (sender and
// recipient phones from $6 and $7).
const sendSQL = `WITH m AS (
	  INSERT INTO network.messages
	         (id, conversation_id, from_account_id, to_account_id, type, content, reference, created_at, delivered_at)
	  SELECT i.id, $1, $2, $3, 'text', $4, '` + sendReferencePrefix + `' || i.id, $5, $5
	    FROM (SELECT nextval('network.messages_id_seq'::regclass) AS id) i
	  RETURNING *),
	ev AS (
	  INSERT INTO network.events (kind, payload, created_at)
	  SELECT '` + eventInbound + `', jsonb_build_object('id', m.id::text, 'from_phone', $6::text, 'to_phone', $7::text,
	                            'conversation_id', m.conversation_id, 'type', m.type, 'content', m.content,
	                            'at', m.created_at), $5
	    FROM m)
	SELECT m.id, m.conversation_id, $6::text, $7::text, m.type, m.content, '', 0::bigint, '', 0, m.reference,
	       m.created_at, m.delivered_at, m.read_at
	  FROM m`

// sendReferencePrefix begins the reference of a message written with Send.
const sendReferencePrefix = "net:"

// conversationSQL returns the conversation of the account pair ($1 < $2),
// creating it at $3 if there is none. It returns no row when another call
// created it after this statement began (the insert conflicts): run it again,
// its new snapshot sees that conversation.
const conversationSQL = `WITH existing AS (
	  SELECT id FROM network.conversations WHERE low_account_id = $1 AND high_account_id = $2),
	created AS (
	  INSERT INTO network.conversations (low_account_id, high_account_id, created_at)
	  SELECT $1, $2, $3 WHERE NOT EXISTS (SELECT 1 FROM existing)
	  ON CONFLICT (low_account_id, high_account_id) DO NOTHING
	  RETURNING id)
	SELECT id FROM existing UNION ALL SELECT id FROM created`

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
	senderID, recipient, err := parties(ctx, n.pool, from, to)
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
		err := n.pool.QueryRow(ctx, conversationSQL, low, high, now).Scan(&conv)
		if err == nil {
			break
		}
		if !errors.Is(err, pgx.ErrNoRows) || try > 0 {
			return fail(fmt.Errorf("conversation: %w", err))
		}
	}
	rows, err := n.pool.Query(ctx, sendSQL, conv, senderID, recipient.ID, text, now, from, to)
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
	rows, err := tx.Query(ctx, `SELECT id, kind, payload FROM network.events
	     WHERE processed_at IS NULL
	     ORDER BY id
	     LIMIT $1
	     FOR UPDATE SKIP LOCKED`, limit)
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
		if _, err := tx.Exec(mctx, `UPDATE network.events SET processed_at = $2 WHERE id = ANY($1)`,
			done, n.clock.Now()); err != nil {
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
