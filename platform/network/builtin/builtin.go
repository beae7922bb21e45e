// Package builtin is the built-in messaging network: accounts, blocks,
// conversations (one per pair of accounts) and messages in the `network` schema
// of the platform's own database. It is the default network (NETWORK=builtin)
// and the one development and tests run against; operators drive it with
// `platform network ...` (AddAccount, VerifyAccount, Block, Inbox, and Read
// and Send, which act as the people holding the accounts).
//
// A message is delivered as it is stored (Delivery.Delivered). What happens
// next is reported through an outbox, the table network.events, written in
// the transaction of the change it reports: a read receipt per message Read
// marks, an Inbound per message Send writes. Drain applies the outbox to a
// network.Sink.
//
// Every phone that enters the package is normalised to E.164 with package
// phone, so "+1 (415) 555-2671" and "+14155552671" name one account. The
// platform's own service account, which sends OTP messages, has the reserved
// phone ServicePhone, which no E.164 number can equal: nobody can look it up,
// message it, block it or impersonate it.
package builtin

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bizmsg/platform/platform/batch"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/phone"
	"github.com/bizmsg/platform/platform/sqlq"
)

// ServicePhone is the reserved phone of the platform's service account (created
// by migration network/0002). Deliver sends from it when Message.FromPhone is
// empty, and Inbox shows it as the sender of such messages.
const ServicePhone = "platform"

// Config configures a Network.
type Config struct {
	// DB is the database whose network schema (migrated:
	// migrate.Migrator.Base) holds the network. Required.
	DB *db.DB
	// Clock stamps deliveries and verification times. Default clock.Real{}.
	// The integration harness passes its fake clock, so delivery times agree
	// with the rest of the platform.
	Clock clock.Clock
	// Batch bounds the shared reads of Lookup: how many lookups one
	// statement answers, and how many such statements run at once.
	// Defaults 64 and batch.ReadMaxInFlight.
	Batch batch.Config
	// DeliverBatch bounds the shared deliveries of Deliver: how many lone
	// deliveries one DeliverBatch run takes, and how many such runs write
	// at once. Defaults 64 and 2 (batch.Config's).
	DeliverBatch batch.Config
}

// Network is the built-in messaging network. It is safe for concurrent use.
type Network struct {
	pool  *pgxpool.Pool
	q     *sqlq.Queries
	clock clock.Clock
	// lookups answers concurrent Lookups together.
	lookups *batch.Batcher[struct{}, lookupKey, lookupResult]
	// deliveries delivers concurrent Delivers together.
	deliveries *batch.Batcher[struct{}, network.Message, network.Result]
}

var (
	_ network.Network        = (*Network)(nil)
	_ network.BatchDeliverer = (*Network)(nil)
)

// New checks cfg and returns the built-in network on its database.
func New(cfg Config) (*Network, error) {
	if cfg.DB == nil || cfg.DB.Pool == nil {
		return nil, errors.New("builtin: Config.DB is required")
	}
	defaults.Clock(&cfg.Clock)
	if cfg.Batch.MaxInFlight == 0 {
		cfg.Batch.MaxInFlight = batch.ReadMaxInFlight
	}
	q, err := sqlq.Load(queries, "queries")
	if err != nil {
		return nil, fmt.Errorf("builtin: %w", err)
	}
	n := &Network{pool: cfg.DB.Pool, q: q, clock: cfg.Clock}
	n.lookups = batch.New(n.lookupMany, cfg.Batch)
	n.deliveries = batch.New(n.deliverShared, cfg.DeliverBatch)
	return n, nil
}

// queries are the network's named queries (platform/sqlq). They are on
// the send path (Lookup, Deliver, DeliverBatch) or beside it, and name the
// network schema, not a tenant's: written as pgx statements
// (sqlq.Queries.Pgx, no ?schema), their texts never vary, and pgx's
// statement cache keeps each prepared on every connection that runs it,
// so each run is one round trip on a generic plan, as before they were
// files.
//
//go:embed queries/*.sql
var queries embed.FS

// query runs named query name with args on q (the pool or a transaction).
func (n *Network) query(ctx context.Context, q db.Querier, name string, args sqlq.Args) (pgx.Rows, error) {
	return db.QueryNamed(ctx, q, n.q, name, "", args)
}

// queryRow runs named query name with args on q as query does, for its
// first row.
func (n *Network) queryRow(ctx context.Context, q db.Querier, name string, args sqlq.Args) pgx.Row {
	return db.QueryRowNamed(ctx, q, n.q, name, "", args)
}

// exec runs named query name with args on the pool for its effect.
func (n *Network) exec(ctx context.Context, name string, args sqlq.Args) error {
	_, err := db.ExecNamed(ctx, n.pool, n.q, name, "", args)
	return err
}

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

// lookupKey is one Lookup's question: the normalised phone, and the
// normalised sender phone ("" for none).
type lookupKey struct{ phone, sender string }

// lookupResult is one Lookup's answer; found is false when no account holds
// the phone.
type lookupResult struct {
	a     network.Account
	found bool
}

// lookupMany answers the lookups waiting together (a batch.Batcher run) in
// one statement: queries/lookup_one.sql for one, else lookup_many.sql.
func (n *Network) lookupMany(ctx context.Context, _ struct{}, keys []lookupKey) ([]lookupResult, error) {
	query, args := "lookup_one", sqlq.Args{"phone": keys[0].phone, "sender": keys[0].sender}
	if len(keys) > 1 {
		ps, ss := make([]string, len(keys)), make([]string, len(keys))
		for i, k := range keys {
			ps[i], ss[i] = k.phone, k.sender
		}
		query, args = "lookup_many", sqlq.Args{"phones": ps, "senders": ss}
	}
	rows, err := n.query(ctx, n.pool, query, args)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]lookupResult, len(keys))
	for rows.Next() {
		var i int64
		var a network.Account
		if err := rows.Scan(&i, &a.ID, &a.Phone, &a.Verified, &a.VerifiedAt, &a.PhoneVerified,
			&a.PhoneVerifiedAt, &a.ReceivingEnabled, &a.BlocksSender); err != nil {
			return nil, err
		}
		if i < 1 || int(i) > len(keys) {
			return nil, fmt.Errorf("lookup returned place %d of %d", i, len(keys))
		}
		a.VerifiedAt = utc(a.VerifiedAt)
		a.PhoneVerifiedAt = utc(a.PhoneVerifiedAt)
		out[i-1] = lookupResult{a: a, found: true}
	}
	return out, rows.Err()
}

// parties reads, in one query (queries/parties.sql), the id of the
// sender's account (phone from) and the recipient's account (phone to)
// with whether it blocks the sender. A missing account is the refusal
// sender_not_registered or not_registered.
func (n *Network) parties(ctx context.Context, from, to string) (int64, network.Account, error) {
	var r partyRow
	err := n.queryRow(ctx, n.pool, "parties", sqlq.Args{"from": from, "to": to}).Scan(r.dest()...)
	if err != nil {
		return 0, network.Account{}, fmt.Errorf("sender and recipient accounts: %w", err)
	}
	return r.accounts(from, to)
}

// partyRow is what parties and batchParties read of a sender and a
// recipient: the sender's account id and the recipient's account with whether
// it blocks the sender, all NULL when no account holds the phone.
type partyRow struct {
	senderID, id         *int64
	phone                *string
	verified, phoneVerif *bool
	receiving, blocks    *bool
	verifiedAt, phoneAt  *time.Time
}

// dest is the row's scan destinations, in the order of the columns: sender
// id, then the recipient's id, phone, verified, verified_at, phone_verified,
// phone_verified_at, receiving_enabled and whether it blocks the sender.
func (r *partyRow) dest() []any {
	return []any{&r.senderID, &r.id, &r.phone, &r.verified, &r.verifiedAt, &r.phoneVerif, &r.phoneAt,
		&r.receiving, &r.blocks}
}

// accounts returns the sender's account id and the recipient's account of a
// message from the phone from to the phone to, or the refusal
// sender_not_registered or not_registered.
func (r *partyRow) accounts(from, to string) (int64, network.Account, error) {
	switch {
	case r.senderID == nil:
		return 0, network.Account{}, permanent(network.CodeSenderNotRegistered, "no account holds the sender phone "+from)
	case r.id == nil:
		return 0, network.Account{}, permanent(network.CodeNotRegistered, "no account holds the recipient phone "+to)
	}
	return *r.senderID, network.Account{
		ID: *r.id, Phone: *r.phone, Verified: *r.verified, VerifiedAt: utc(r.verifiedAt),
		PhoneVerified: *r.phoneVerif, PhoneVerifiedAt: utc(r.phoneAt),
		ReceivingEnabled: *r.receiving, BlocksSender: *r.blocks,
	}, nil
}

// refusal returns why recipient cannot receive from the account senderID
// (self, or the recipient's ReasonCode), or nil when it can.
func refusal(senderID int64, recipient network.Account) error {
	if recipient.ID == senderID {
		return permanent(network.CodeSelf, "the recipient is the sender")
	}
	if code := recipient.ReasonCode(); code != network.CodeOK {
		return permanent(code, refusals[code])
	}
	return nil
}

// Lookup returns the account holding phone, or an error wrapping
// network.ErrNotFound. With a senderPhone, Account.BlocksSender tells whether
// the account blocks the sender's account (false when the sender has none).
// A malformed phone gives an error wrapping phone.ErrInvalid.
//
// Lookups that wait while the network's reads are all busy (Config.Batch)
// share one statement, whatever their organizations: the send path looks
// up every recipient, so under load this saves a statement per send. A read
// starts only after every lookup it answers arrived, so each sees what was
// committed before it was asked.
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
	r, err := n.lookups.Do(ctx, struct{}{}, lookupKey{phone: p, sender: sender})
	switch {
	case err != nil:
		// The read failed: the platform's database, not a network.
		return network.Account{}, network.Platform(fmt.Errorf("lookup %s: %w", p, err))
	case !r.found:
		return network.Account{}, fmt.Errorf("lookup %s: %w", p, network.ErrNotFound)
	}
	return r.a, nil
}

// Verified reports whether the account holding phone is verified, or returns
// an error wrapping network.ErrNotFound.
func (n *Network) Verified(ctx context.Context, rawPhone string) (bool, error) {
	p, err := normalize("phone", rawPhone)
	if err != nil {
		return false, err
	}
	var v bool
	err = n.queryRow(ctx, n.pool, "verified", sqlq.Args{"phone": p}).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, fmt.Errorf("verified %s: %w", p, network.ErrNotFound)
	case err != nil:
		// The platform's database, not a network.
		return false, network.Platform(fmt.Errorf("verified %s: %w", p, err))
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
//
// Deliveries share statements across the process: the calls that arrive
// while earlier deliveries are in the database, whatever their
// organizations, go together through DeliverBatch's statements (a
// batch.Batcher run; a call that finds none busy runs alone at once). A
// worker whose jobs belong to many tenants delivers them one per tenant
// batch, so without this each would pay the network's statements and
// commit on its own.
func (n *Network) Deliver(ctx context.Context, msg network.Message) (network.Delivery, error) {
	r, err := n.deliveries.Do(ctx, struct{}{}, msg)
	if err != nil {
		// The caller's context ended, or the run panicked: whether the
		// network stored the message is unknown, and a retry with the
		// same reference returns it if it did.
		return network.Delivery{}, transient(msg.Reference, err)
	}
	return r.Delivery, r.Err
}

// deliverShared delivers the Delivers waiting together (a batch.Batcher
// run): each message's outcome is its own Result, never the run's error.
func (n *Network) deliverShared(ctx context.Context, _ struct{}, msgs []network.Message) ([]network.Result, error) {
	return n.deliverBatch(ctx, msgs), nil
}

// deliverOne is the delivery of one message on its own statements.
func (n *Network) deliverOne(ctx context.Context, msg network.Message) (network.Delivery, error) {
	from, to, err := check(msg)
	if err != nil {
		return network.Delivery{}, err
	}
	return n.deliverChecked(ctx, msg, from, to)
}

// check validates msg for Deliver and DeliverBatch: it returns the sender's
// and the recipient's phones normalised (the sender is ServicePhone when
// msg.FromPhone is empty), or the refusal invalid_message or invalid_phone.
func check(msg network.Message) (from, to string, err error) {
	if msg.Reference == "" {
		return "", "", permanent(network.CodeInvalidMessage, "the message has no reference")
	}
	if !messageTypes[msg.Type] {
		return "", "", permanent(network.CodeInvalidMessage,
			fmt.Sprintf("message type %q is not one of text, image, voice, document", msg.Type))
	}
	if to, err = phone.Normalize(msg.ToPhone); err != nil {
		return "", "", permanent(network.CodeInvalidPhone, "recipient phone "+err.Error())
	}
	from = ServicePhone
	if msg.FromPhone != "" {
		if from, err = phone.Normalize(msg.FromPhone); err != nil {
			return "", "", permanent(network.CodeInvalidPhone, "sender phone "+err.Error())
		}
	}
	return from, to, nil
}

// deliverChecked is Deliver after check: deliver, with a transient error
// wrapped to name the reference.
func (n *Network) deliverChecked(ctx context.Context, msg network.Message, from, to string) (network.Delivery, error) {
	d, err := n.deliver(ctx, msg, from, to)
	if err != nil && !network.IsPermanent(err) {
		return network.Delivery{}, transient(msg.Reference, err)
	}
	return d, err
}

// transient wraps a transient error of the delivery of the message ref.
func transient(ref string, err error) error {
	return fmt.Errorf("network: deliver %s: %w", ref, err)
}

func (n *Network) deliver(ctx context.Context, msg network.Message, from, to string) (network.Delivery, error) {
	// A refusal is answered only when the reference was never delivered: a
	// repeat returns the first delivery whatever changed since. The happy
	// path does not look the reference up first: the insert's unique
	// reference finds a repeat.
	refuse := func(err error) (network.Delivery, error) {
		if d, found, derr := n.delivered(ctx, msg.Reference, from, to); derr != nil || found {
			return d, derr
		}
		return network.Delivery{}, err
	}
	senderID, recipient, err := n.parties(ctx, from, to)
	if network.IsPermanent(err) {
		return refuse(err)
	} else if err != nil {
		return network.Delivery{}, err
	}
	if err := refusal(senderID, recipient); err != nil {
		return refuse(err)
	}

	now := n.clock.Now()
	low, high := min(senderID, recipient.ID), max(senderID, recipient.ID)
	for try := 0; ; try++ {
		var conv, id *int64
		var at *time.Time
		// One statement, one commit (queries/insert_message.sql).
		err := n.queryRow(ctx, n.pool, "insert_message", sqlq.Args{
			"low": low, "high": high, "now": now, "from_id": senderID, "to_id": recipient.ID,
			"type": msg.Type, "content": msg.Content, "file_name": db.Null(msg.FileName),
			"file_size": db.Null(msg.FileSize), "file_type": db.Null(msg.FileType),
			"duration": db.Null(int64(msg.Duration)), "reference": msg.Reference,
		}).Scan(&conv, &id, &at)
		switch {
		case err != nil:
			return network.Delivery{}, fmt.Errorf("insert message: %w", err)
		case id != nil:
			return network.Delivery{ConversationID: *conv, RecipientID: recipient.ID, MessageID: *id,
				DeliveredAt: at.UTC(), Delivered: true}, nil
		}
		// Nothing inserted: the reference was delivered already (a repeat,
		// or a concurrent call that committed first; answer with that), or
		// a concurrent call created the pair's conversation after this
		// statement's snapshot (the next statement sees it).
		d, found, err := n.delivered(ctx, msg.Reference, from, to)
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

// refusals are the messages of the refusals an account's ReasonCode gives.
var refusals = map[string]string{
	network.CodePhoneUnverified:   "the recipient's phone is not verified",
	network.CodeReceivingDisabled: "the recipient does not receive messages",
	network.CodeBlockedSender:     "the recipient blocks the sender",
}

// delivered returns the delivery of a message already stored under ref. A
// message under ref between other phones than from and to is a
// CodeReferenceReused refusal.
func (n *Network) delivered(ctx context.Context, ref, from, to string) (network.Delivery, bool, error) {
	var d network.Delivery
	var gotFrom, gotTo string
	err := n.queryRow(ctx, n.pool, "delivered", sqlq.Args{"reference": ref}).
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
	d.DeliveredAt, d.Delivered = d.DeliveredAt.UTC(), true
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

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
