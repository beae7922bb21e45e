// Package builtin is the built-in messaging network: accounts, blocks,
// conversations (one per pair of accounts) and messages in the `network` schema
// of the platform's own database. It is the default network (NETWORK=builtin)
// and the one development and tests run against; operators drive it with
// `platform network ...` (AddAccount, VerifyAccount, Block, Inbox).
//
// Every phone that enters the package is normalised to E.164 with package
// phone, so "+1 (415) 555-2671" and "+14155552671" name one account. The
// platform's own service account, which sends OTP messages, has the reserved
// phone ServicePhone, which no E.164 number can equal: nobody can look it up,
// message it, block it or impersonate it.
package builtin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/phone"
)

// ServicePhone is the reserved phone of the platform's service account (created
// by migration network/0002). Deliver sends from it when Message.FromPhone is
// empty, and Inbox shows it as the sender of such messages.
const ServicePhone = "platform"

// Config configures a Network.
type Config struct {
	// Clock stamps deliveries and verification times. Default clock.Real{}.
	// The integration harness passes its fake clock, so delivery times agree
	// with the rest of the platform.
	Clock clock.Clock
}

// Network is the built-in messaging network. It is safe for concurrent use.
type Network struct {
	pool  *pgxpool.Pool
	clock clock.Clock
}

var _ network.Network = (*Network)(nil)

// New returns the built-in network on d, whose `network` schema must be
// migrated (migrate.Migrator.Base does it).
func New(d *db.DB, cfg Config) *Network {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	return &Network{pool: d.Pool, clock: cfg.Clock}
}

// querier is what both the pool and a transaction offer.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// accountSelect reads an account and whether it blocks the account of the
// phone in $2 (an empty phone matches no account).
const accountSelect = `SELECT a.id, a.phone, a.verified, a.verified_at, a.phone_verified,
       a.phone_verified_at, a.receiving_enabled,
       EXISTS (SELECT 1 FROM network.blocks b JOIN network.accounts s ON s.id = b.blocked_account_id
               WHERE b.account_id = a.id AND s.phone = $2)
  FROM network.accounts a`

func scanAccount(row pgx.Row) (network.Account, error) {
	var a network.Account
	err := row.Scan(&a.ID, &a.Phone, &a.Verified, &a.VerifiedAt, &a.PhoneVerified,
		&a.PhoneVerifiedAt, &a.ReceivingEnabled, &a.BlocksSender)
	if errors.Is(err, pgx.ErrNoRows) {
		return network.Account{}, network.ErrNotFound
	}
	if err != nil {
		return network.Account{}, err
	}
	a.VerifiedAt = utc(a.VerifiedAt)
	a.PhoneVerifiedAt = utc(a.PhoneVerifiedAt)
	return a, nil
}

// account returns the account holding the normalised phone p, with
// BlocksSender telling whether it blocks the normalised phone sender.
func account(ctx context.Context, q querier, p, sender string) (network.Account, error) {
	return scanAccount(q.QueryRow(ctx, accountSelect+" WHERE a.phone = $1", p, sender))
}

// parties reads, in one query, the id of the sender's account (phone from)
// and the recipient's account (phone to) with whether it blocks the sender.
// A missing account is the refusal sender_not_registered or not_registered.
func parties(ctx context.Context, q querier, from, to string) (int64, network.Account, error) {
	var senderID *int64
	var a struct {
		id                   *int64
		phone                *string
		verified, phoneVerif *bool
		receiving, blocks    *bool
		verifiedAt, phoneAt  *time.Time
	}
	err := q.QueryRow(ctx, `SELECT (SELECT id FROM network.accounts WHERE phone = $2),
	       a.id, a.phone, a.verified, a.verified_at, a.phone_verified, a.phone_verified_at,
	       a.receiving_enabled,
	       EXISTS (SELECT 1 FROM network.blocks b JOIN network.accounts s ON s.id = b.blocked_account_id
	               WHERE b.account_id = a.id AND s.phone = $2)
	  FROM (SELECT 1) one LEFT JOIN network.accounts a ON a.phone = $1`, to, from).
		Scan(&senderID, &a.id, &a.phone, &a.verified, &a.verifiedAt, &a.phoneVerif, &a.phoneAt,
			&a.receiving, &a.blocks)
	switch {
	case err != nil:
		return 0, network.Account{}, fmt.Errorf("sender and recipient accounts: %w", err)
	case senderID == nil:
		return 0, network.Account{}, permanent(network.CodeSenderNotRegistered, "no account holds the sender phone "+from)
	case a.id == nil:
		return 0, network.Account{}, permanent(network.CodeNotRegistered, "no account holds the recipient phone "+to)
	}
	return *senderID, network.Account{
		ID: *a.id, Phone: *a.phone, Verified: *a.verified, VerifiedAt: utc(a.verifiedAt),
		PhoneVerified: *a.phoneVerif, PhoneVerifiedAt: utc(a.phoneAt),
		ReceivingEnabled: *a.receiving, BlocksSender: *a.blocks,
	}, nil
}

// Lookup returns the account holding phone, or an error wrapping
// network.ErrNotFound. With a senderPhone, Account.BlocksSender tells whether
// the account blocks the sender's account (false when the sender has none).
// A malformed phone gives an error wrapping phone.ErrInvalid.
func (n *Network) Lookup(ctx context.Context, rawPhone, senderPhone string) (network.Account, error) {
	p, err := normalize("phone", rawPhone)
	if err != nil {
		return network.Account{}, err
	}
	var sender string
	if senderPhone != "" {
		if sender, err = normalize("sender phone", senderPhone); err != nil {
			return network.Account{}, err
		}
	}
	a, err := account(ctx, n.pool, p, sender)
	if err != nil {
		return network.Account{}, fmt.Errorf("lookup %s: %w", p, err)
	}
	return a, nil
}

// Verified reports whether the account holding phone is verified, or returns
// an error wrapping network.ErrNotFound.
func (n *Network) Verified(ctx context.Context, rawPhone string) (bool, error) {
	p, err := normalize("phone", rawPhone)
	if err != nil {
		return false, err
	}
	var v bool
	err = n.pool.QueryRow(ctx, `SELECT verified FROM network.accounts WHERE phone = $1`, p).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		err = network.ErrNotFound
	}
	if err != nil {
		return false, fmt.Errorf("verified %s: %w", p, err)
	}
	return v, nil
}

// messageTypes are the types the network carries.
var messageTypes = map[string]bool{"text": true, "image": true, "voice": true, "document": true}

// Deliver delivers msg exactly once per msg.Reference. It reads the sender
// (the service account when msg.FromPhone is empty) and the recipient in one
// query, checks that the recipient can receive from the sender, then in one
// statement (one commit) gets or creates the pair's conversation and inserts
// the message. A reference already
// delivered returns the first Delivery and creates nothing, whatever changed
// since (a block, disabled receiving), also when several calls race with one
// reference; a reference first used between other accounts is refused with
// network.CodeReferenceReused.
//
// Refusals are *network.PermanentError with the network.Code* constants:
// invalid_message, invalid_phone, sender_not_registered, not_registered, self,
// phone_unverified, receiving_disabled, blocked_sender, reference_reused.
// Other errors (the database) are transient.
func (n *Network) Deliver(ctx context.Context, msg network.Message) (network.Delivery, error) {
	if msg.Reference == "" {
		return network.Delivery{}, permanent(network.CodeInvalidMessage, "the message has no reference")
	}
	if !messageTypes[msg.Type] {
		return network.Delivery{}, permanent(network.CodeInvalidMessage,
			fmt.Sprintf("message type %q is not one of text, image, voice, document", msg.Type))
	}
	to, err := phone.Normalize(msg.ToPhone)
	if err != nil {
		return network.Delivery{}, permanent(network.CodeInvalidPhone, "recipient phone "+err.Error())
	}
	from := ServicePhone
	if msg.FromPhone != "" {
		if from, err = phone.Normalize(msg.FromPhone); err != nil {
			return network.Delivery{}, permanent(network.CodeInvalidPhone, "sender phone "+err.Error())
		}
	}
	d, err := n.deliver(ctx, msg, from, to)
	if err != nil && !network.IsPermanent(err) {
		return network.Delivery{}, fmt.Errorf("network: deliver %s: %w", msg.Reference, err)
	}
	return d, err
}

func (n *Network) deliver(ctx context.Context, msg network.Message, from, to string) (network.Delivery, error) {
	// A refusal is answered only when the reference was never delivered: a
	// repeat returns the first delivery whatever changed since. The happy
	// path does not look the reference up first: the insert's unique
	// reference finds a repeat.
	refuse := func(err error) (network.Delivery, error) {
		if d, found, derr := delivered(ctx, n.pool, msg.Reference, from, to); derr != nil || found {
			return d, derr
		}
		return network.Delivery{}, err
	}
	senderID, recipient, err := parties(ctx, n.pool, from, to)
	if network.IsPermanent(err) {
		return refuse(err)
	} else if err != nil {
		return network.Delivery{}, err
	}
	if recipient.ID == senderID {
		return refuse(permanent(network.CodeSelf, "the recipient is the sender"))
	}
	if code := recipient.ReasonCode(); code != network.CodeOK {
		return refuse(permanent(code, refusals[code]))
	}

	now := n.clock.Now()
	low, high := min(senderID, recipient.ID), max(senderID, recipient.ID)
	for try := 0; ; try++ {
		var conv, id *int64
		var at *time.Time
		err := n.pool.QueryRow(ctx, insertMessage, low, high, now, senderID, recipient.ID, msg.Type, msg.Content,
			nullString(msg.FileName), nullInt(msg.FileSize), nullString(msg.FileType), nullInt(int64(msg.Duration)),
			msg.Reference).Scan(&conv, &id, &at)
		switch {
		case err != nil:
			return network.Delivery{}, fmt.Errorf("insert message: %w", err)
		case id != nil:
			return network.Delivery{ConversationID: *conv, RecipientID: recipient.ID, MessageID: *id,
				DeliveredAt: at.UTC()}, nil
		}
		// Nothing inserted: the reference was delivered already (a repeat,
		// or a concurrent call that committed first; answer with that), or
		// a concurrent call created the pair's conversation after this
		// statement's snapshot (the next statement sees it).
		d, found, err := delivered(ctx, n.pool, msg.Reference, from, to)
		switch {
		case err != nil || found:
			return d, err
		case conv == nil && try == 0:
			continue
		default:
			return network.Delivery{}, errors.New("nothing inserted, and no message holds the reference")
		}
	}
}

// insertMessage stores a delivery in one statement (one implicit
// transaction, one commit): it finds the conversation of the account pair
// ($1 < $2), creating it if needed, and inserts the message under its unique
// reference. It returns the conversation and the new message's id and time;
// the id is NULL when the reference exists already (nothing is inserted, and
// no conversation is created for it), and the conversation too when another
// call created it after this statement began (it conflicts on the pair's
// unique index and inserts nothing: run the statement again).
const insertMessage = `WITH existing AS (
	  SELECT id FROM network.conversations WHERE low_account_id = $1 AND high_account_id = $2),
	created AS (
	  INSERT INTO network.conversations (low_account_id, high_account_id, created_at)
	  SELECT $1, $2, $3
	   WHERE NOT EXISTS (SELECT 1 FROM existing)
	     AND NOT EXISTS (SELECT 1 FROM network.messages WHERE reference = $12)
	  ON CONFLICT (low_account_id, high_account_id) DO NOTHING
	  RETURNING id),
	conv AS (SELECT id FROM existing UNION ALL SELECT id FROM created),
	ins AS (
	  INSERT INTO network.messages
	         (conversation_id, from_account_id, to_account_id, type, content,
	          file_name, file_size, file_type, duration, reference, created_at)
	  SELECT id, $4, $5, $6, $7, $8, $9, $10, $11, $12, $3 FROM conv
	  ON CONFLICT (reference) DO NOTHING
	  RETURNING id, created_at)
	SELECT (SELECT id FROM conv LIMIT 1), ins.id, ins.created_at
	  FROM (SELECT 1) one LEFT JOIN ins ON true`

// refusals are the messages of the refusals an account's ReasonCode gives.
var refusals = map[string]string{
	network.CodePhoneUnverified:   "the recipient's phone is not verified",
	network.CodeReceivingDisabled: "the recipient does not receive messages",
	network.CodeBlockedSender:     "the recipient blocks the sender",
}

// delivered returns the delivery of a message already stored under ref. A
// message under ref between other phones than from and to is a
// CodeReferenceReused refusal.
func delivered(ctx context.Context, q querier, ref, from, to string) (network.Delivery, bool, error) {
	var d network.Delivery
	var gotFrom, gotTo string
	err := q.QueryRow(ctx, `SELECT m.id, m.conversation_id, m.to_account_id, m.created_at, f.phone, t.phone
	      FROM network.messages m
	      JOIN network.accounts f ON f.id = m.from_account_id
	      JOIN network.accounts t ON t.id = m.to_account_id
	     WHERE m.reference = $1`, ref).
		Scan(&d.MessageID, &d.ConversationID, &d.RecipientID, &d.DeliveredAt, &gotFrom, &gotTo)
	if errors.Is(err, pgx.ErrNoRows) {
		return network.Delivery{}, false, nil
	}
	if err != nil {
		return network.Delivery{}, false, fmt.Errorf("find reference: %w", err)
	}
	if gotFrom != from || gotTo != to {
		return network.Delivery{}, true, permanent(network.CodeReferenceReused,
			"the reference was already used for a message between other accounts")
	}
	d.DeliveredAt = d.DeliveredAt.UTC()
	return d, true, nil
}

// normalize returns raw in E.164, or an error naming what it is that wraps
// phone.ErrInvalid.
func normalize(what, raw string) (string, error) {
	p, err := phone.Normalize(raw)
	if err != nil {
		return "", fmt.Errorf("%s %q: %w", what, raw, err)
	}
	return p, nil
}

func permanent(code, message string) *network.PermanentError {
	return &network.PermanentError{Code: code, Message: message}
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullInt(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
