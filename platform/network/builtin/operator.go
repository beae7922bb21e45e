package builtin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/sqlq"
)

// AccountSpec is the state AddAccount gives an account.
type AccountSpec struct {
	// Phone is the account's phone, normalised to E.164.
	Phone string
	// Verified: the account owner is verified on the network.
	Verified bool
	// PhoneVerified: the account's phone is verified.
	PhoneVerified bool
	// ReceivingEnabled: the account accepts messages.
	ReceivingEnabled bool
}

// AddAccount creates the account of spec.Phone, or updates it, to the state
// spec describes, and returns it. A verification time is set when a flag turns
// true, kept while it stays true and cleared when it turns false.
func (n *Network) AddAccount(ctx context.Context, spec AccountSpec) (network.Account, error) {
	p, err := normalize("phone", spec.Phone)
	if err != nil {
		return network.Account{}, err
	}
	row := n.queryRow(ctx, n.pool, "add_account", sqlq.Args{"phone": p, "verified": spec.Verified,
		"phone_verified": spec.PhoneVerified, "receiving_enabled": spec.ReceivingEnabled, "now": n.clock.Now()})
	a, err := scanAccount(row)
	if err != nil {
		return network.Account{}, fmt.Errorf("add account %s: %w", p, err)
	}
	return a, nil
}

// VerifyAccount marks the account owner of phone verified (keeping the first
// verification time) and returns the account, or an error wrapping
// network.ErrNotFound.
func (n *Network) VerifyAccount(ctx context.Context, rawPhone string) (network.Account, error) {
	p, err := normalize("phone", rawPhone)
	if err != nil {
		return network.Account{}, err
	}
	row := n.queryRow(ctx, n.pool, "verify_account", sqlq.Args{"phone": p, "now": n.clock.Now()})
	a, err := scanAccount(row)
	if err != nil {
		return network.Account{}, fmt.Errorf("verify account %s: %w", p, err)
	}
	return a, nil
}

// Block makes the account of recipientPhone block the account of senderPhone:
// Lookup reports it and Deliver refuses with blocked_sender. Blocking twice is
// not an error. Either account missing gives an error wrapping
// network.ErrNotFound; an account cannot block itself.
func (n *Network) Block(ctx context.Context, recipientPhone, senderPhone string) error {
	r, s, err := n.pair(ctx, recipientPhone, senderPhone)
	if err != nil {
		return fmt.Errorf("block: %w", err)
	}
	if err := n.exec(ctx, "block", sqlq.Args{"account_id": r, "blocked_id": s, "now": n.clock.Now()}); err != nil {
		return fmt.Errorf("block: %w", err)
	}
	return nil
}

// Unblock lifts a block made by Block. Lifting a block that does not exist is
// not an error; either account missing gives an error wrapping
// network.ErrNotFound.
func (n *Network) Unblock(ctx context.Context, recipientPhone, senderPhone string) error {
	r, s, err := n.pair(ctx, recipientPhone, senderPhone)
	if err != nil {
		return fmt.Errorf("unblock: %w", err)
	}
	if err := n.exec(ctx, "unblock", sqlq.Args{"account_id": r, "blocked_id": s}); err != nil {
		return fmt.Errorf("unblock: %w", err)
	}
	return nil
}

// pair returns the account ids of a recipient and a sender, two different
// existing accounts.
func (n *Network) pair(ctx context.Context, recipientPhone, senderPhone string) (recipient, sender int64, err error) {
	r, err := normalize("phone", recipientPhone)
	if err != nil {
		return 0, 0, err
	}
	s, err := normalize("sender phone", senderPhone)
	if err != nil {
		return 0, 0, err
	}
	if r == s {
		return 0, 0, errors.New("an account cannot block itself")
	}
	if recipient, err = n.accountID(ctx, r); err != nil {
		return 0, 0, fmt.Errorf("recipient %s: %w", r, err)
	}
	if sender, err = n.accountID(ctx, s); err != nil {
		return 0, 0, fmt.Errorf("sender %s: %w", s, err)
	}
	return recipient, sender, nil
}

func (n *Network) accountID(ctx context.Context, p string) (int64, error) {
	var id int64
	err := n.queryRow(ctx, n.pool, "account_id", sqlq.Args{"phone": p}).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, network.ErrNotFound
	}
	if err != nil {
		return 0, err
	}
	return id, nil
}

// phoneAccount normalises raw, the phone named what (normalize), and finds
// its account (accountID): the phone in E.164 and the account's id. A
// failed lookup is wrapped as "<op> <phone>: ...".
func (n *Network) phoneAccount(ctx context.Context, what, raw, op string) (string, int64, error) {
	p, err := normalize(what, raw)
	if err != nil {
		return "", 0, err
	}
	id, err := n.accountID(ctx, p)
	if err != nil {
		return "", 0, fmt.Errorf("%s %s: %w", op, p, err)
	}
	return p, id, nil
}

// InboxMessage is one message an account received.
type InboxMessage struct {
	MessageID      int64
	ConversationID int64
	// FromPhone is the sender's phone; ServicePhone for the platform's own
	// messages (OTPs). ToPhone is the recipient's.
	FromPhone string
	ToPhone   string
	network.Media
	// Reference is the sender's idempotency reference (Deliver's), or the
	// network's own ("net:<message id>") for a message written with Send.
	Reference string
	// CreatedAt is the delivery time, in UTC.
	CreatedAt time.Time
	// DeliveredAt is when the message reached the recipient's inbox, in
	// UTC: CreatedAt, as the network stores a message in the inbox at once.
	DeliveredAt time.Time
	// ReadAt is when the recipient read it (Read), in UTC; nil while
	// unread.
	ReadAt *time.Time
}

// Receipt is the message's receipt state: network.ReceiptRead once the
// recipient read it, else network.ReceiptDelivered.
func (m InboxMessage) Receipt() string {
	if m.ReadAt != nil {
		return network.ReceiptRead
	}
	return network.ReceiptDelivered
}

// scanInbox scans a message of an inbox (queries/inbox.sql), a read
// (read.sql) or a Send (send.sql): the message, its sender's and
// recipient's phones, its media, reference and times.
func scanInbox(row pgx.CollectableRow) (InboxMessage, error) {
	var m InboxMessage
	err := row.Scan(&m.MessageID, &m.ConversationID, &m.FromPhone, &m.ToPhone, &m.Type, &m.Content,
		&m.FileName, &m.FileSize, &m.FileType, &m.Duration, &m.Reference, &m.CreatedAt, &m.DeliveredAt,
		&m.ReadAt)
	m.CreatedAt, m.DeliveredAt, m.ReadAt = m.CreatedAt.UTC(), m.DeliveredAt.UTC(), utc(m.ReadAt)
	return m, err
}

// Inbox returns every message the account of phone received, in delivery
// order (newest last), or an error wrapping network.ErrNotFound.
func (n *Network) Inbox(ctx context.Context, rawPhone string) ([]InboxMessage, error) {
	return n.InboxLast(ctx, rawPhone, 0)
}

// InboxLast is Inbox limited to the last count messages (all when count ≤ 0).
func (n *Network) InboxLast(ctx context.Context, rawPhone string, count int) ([]InboxMessage, error) {
	p, id, err := n.phoneAccount(ctx, "phone", rawPhone, "inbox")
	if err != nil {
		return nil, err
	}
	var limit *int
	if count > 0 {
		limit = &count
	}
	rows, err := n.query(ctx, n.pool, "inbox", sqlq.Args{"account_id": id, "limit": limit})
	if err != nil {
		return nil, fmt.Errorf("inbox %s: %w", p, err)
	}
	msgs, err := pgx.CollectRows(rows, scanInbox)
	if err != nil {
		return nil, fmt.Errorf("inbox %s: %w", p, err)
	}
	slices.Reverse(msgs)
	return msgs, nil
}
