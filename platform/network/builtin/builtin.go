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
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bizmsg/platform/platform/batch"
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
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Batch.MaxInFlight == 0 {
		cfg.Batch.MaxInFlight = batch.ReadMaxInFlight
	}
	n := &Network{pool: cfg.DB.Pool, clock: cfg.Clock}
	n.lookups = batch.New(n.lookupMany, cfg.Batch)
	n.deliveries = batch.New(n.deliverShared, cfg.DeliverBatch)
	return n, nil
}

// querier is what both the pool and a transaction offer.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
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

// lookupColumns are what Lookup reads of an account, after its place in
// the batch: the account and whether it blocks the account of the phone
// q.sender (an empty phone matches no account).
const lookupColumns = `q.i, a.id, a.phone, a.verified, a.verified_at, a.phone_verified,
       a.phone_verified_at, a.receiving_enabled,
       EXISTS (SELECT 1 FROM network.blocks b JOIN network.accounts s ON s.id = b.blocked_account_id
               WHERE b.account_id = a.id AND s.phone = q.sender)`

// lookupManySQL reads the accounts holding the normalised phones $1 (a
// text array), each with whether it blocks the account of the phone at the
// same place in $2, numbered by their place (from 1). A phone no account
// holds has no row. lookupOneSQL is the same for one phone ($1) and sender
// ($2), what a network that is not busy runs: its plan is a plain index
// lookup.
const (
	lookupManySQL = `SELECT ` + lookupColumns + `
  FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS q(phone, sender, i)
  JOIN network.accounts a ON a.phone = q.phone`
	lookupOneSQL = `SELECT ` + lookupColumns + `
  FROM (SELECT 1::bigint AS i, $1::text AS phone, $2::text AS sender) q
  JOIN network.accounts a ON a.phone = q.phone`
)

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
// one statement: lookupOneSQL for one, else lookupManySQL.
func (n *Network) lookupMany(ctx context.Context, _ struct{}, keys []lookupKey) ([]lookupResult, error) {
	query, phones, senders := lookupOneSQL, any(keys[0].phone), any(keys[0].sender)
	if len(keys) > 1 {
		ps, ss := make([]string, len(keys)), make([]string, len(keys))
		for i, k := range keys {
			ps[i], ss[i] = k.phone, k.sender
		}
		query, phones, senders = lookupManySQL, ps, ss
	}
	rows, err := n.pool.Query(ctx, query, phones, senders)
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

// parties reads, in one query, the id of the sender's account (phone from)
// and the recipient's account (phone to) with whether it blocks the sender.
// A missing account is the refusal sender_not_registered or not_registered.
func parties(ctx context.Context, q querier, from, to string) (int64, network.Account, error) {
	var r partyRow
	err := q.QueryRow(ctx, `SELECT (SELECT id FROM network.accounts WHERE phone = $2),
	       a.id, a.phone, a.verified, a.verified_at, a.phone_verified, a.phone_verified_at,
	       a.receiving_enabled,
	       EXISTS (SELECT 1 FROM network.blocks b JOIN network.accounts s ON s.id = b.blocked_account_id
	               WHERE b.account_id = a.id AND s.phone = $2)
	  FROM (SELECT 1) one LEFT JOIN network.accounts a ON a.phone = $1`, to, from).Scan(r.dest()...)
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
	err = n.pool.QueryRow(ctx, `SELECT verified FROM network.accounts WHERE phone = $1`, p).Scan(&v)
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
	if err := refusal(senderID, recipient); err != nil {
		return refuse(err)
	}

	now := n.clock.Now()
	low, high := min(senderID, recipient.ID), max(senderID, recipient.ID)
	for try := 0; ; try++ {
		var conv, id *int64
		var at *time.Time
		err := n.pool.QueryRow(ctx, insertMessage, low, high, now, senderID, recipient.ID, msg.Type, msg.Content,
			db.Null(msg.FileName), db.Null(msg.FileSize), db.Null(msg.FileType), db.Null(int64(msg.Duration)),
			msg.Reference).Scan(&conv, &id, &at)
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
// reference, delivered ($3: the network stores it in the recipient's inbox).
// It returns the conversation and the new message's id and time;
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
	          file_name, file_size, file_type, duration, reference, created_at, delivered_at)
	  SELECT id, $4, $5, $6, $7, $8, $9, $10, $11, $12, $3, $3 FROM conv
	  ON CONFLICT (reference) DO NOTHING
	  RETURNING id, created_at)
	SELECT (SELECT id FROM conv LIMIT 1), ins.id, ins.created_at
	  FROM (SELECT 1) one LEFT JOIN ins ON true`

// batchParties is parties for a batch (DeliverBatch): for each pair i of
// phones ($1[i] the sender's, $2[i] the recipient's, i from 1) one row: i,
// then the columns of parties (partyRow), NULL for a missing account.
//
// The accounts are found per pair by a subquery on the phone index (a
// scalar subquery, and a LATERAL one that OFFSET 0 keeps from being turned
// into a join): the statement is prepared (pgx's statement cache), and the
// generic plan Postgres switches to after five runs does not know the
// arrays' length, so a join could become a scan of every account per batch.
const batchParties = `SELECT p.i, p.sender_id,
	       a.id, a.phone, a.verified, a.verified_at, a.phone_verified, a.phone_verified_at,
	       a.receiving_enabled,
	       EXISTS (SELECT 1 FROM network.blocks b WHERE b.account_id = a.id AND b.blocked_account_id = p.sender_id)
	  FROM (SELECT x.i, x.to_phone, (SELECT s.id FROM network.accounts s WHERE s.phone = x.from_phone) AS sender_id
	          FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS x(from_phone, to_phone, i)) p
	  LEFT JOIN LATERAL (SELECT * FROM network.accounts a WHERE a.phone = p.to_phone OFFSET 0) a ON true`

// insertMessages is insertMessage for a batch (DeliverBatch), in one
// statement (one commit) whatever its size. Each message is the i-th element
// of the arrays $1..$11: its account pair (low $1 < high $2), sender $3,
// recipient $4, type $5, content $6, file name $7, file size $8, file type
// $9 and duration $10 ("" and 0 for none: stored NULL as Deliver does) and
// reference $11, the references all different; $12 is the delivery time.
//
// Like insertMessage it gets or creates the conversation of each pair, but
// creates none for a pair whose messages' references all exist already, and
// a pair whose conversation another call created after this statement began
// conflicts and gets none: its messages are not inserted (the caller delivers
// them again, one by one). A message whose reference exists is not inserted
// either. It returns the reference, id, conversation and time of each message
// inserted.
//
// Each pair's conversation is found by a scalar subquery on the pair's
// unique index, whatever the plan (see batchParties).
//
// Message ids are drawn in the order of the arrays, so they follow the
// batch's order as successive Deliver calls would. Rows are inserted in a
// fixed order, conversations by pair and then messages by reference, so that
// concurrent batches sharing pairs or references wait for one another instead
// of deadlocking. (The sort over all messages makes every conversation exist
// before the first message is inserted.)
const insertMessages = `WITH input AS (
	  SELECT nextval('network.messages_id_seq'::regclass) AS id, m.*
	    FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], $6::text[],
	                $7::text[], $8::bigint[], $9::text[], $10::bigint[], $11::text[]) WITH ORDINALITY
	         AS m(low, high, from_id, to_id, type, content, file_name, file_size, file_type, duration,
	              reference, ord)
	   ORDER BY m.ord),
	existing AS (
	  SELECT p.low, p.high,
	         (SELECT c.id FROM network.conversations c
	           WHERE c.low_account_id = p.low AND c.high_account_id = p.high) AS id
	    FROM (SELECT DISTINCT low, high FROM input) p),
	created AS (
	  INSERT INTO network.conversations (low_account_id, high_account_id, created_at)
	  SELECT DISTINCT m.low, m.high, $12::timestamptz FROM input m
	   WHERE NOT EXISTS (SELECT 1 FROM existing e WHERE e.low = m.low AND e.high = m.high AND e.id IS NOT NULL)
	     AND NOT EXISTS (SELECT 1 FROM network.messages x WHERE x.reference = m.reference)
	   ORDER BY m.low, m.high
	  ON CONFLICT (low_account_id, high_account_id) DO NOTHING
	  RETURNING id, low_account_id AS low, high_account_id AS high),
	conv AS (SELECT id, low, high FROM existing WHERE id IS NOT NULL UNION ALL SELECT id, low, high FROM created)
	INSERT INTO network.messages
	       (id, conversation_id, from_account_id, to_account_id, type, content,
	        file_name, file_size, file_type, duration, reference, created_at, delivered_at)
	SELECT m.id, c.id, m.from_id, m.to_id, m.type, m.content,
	       NULLIF(m.file_name, ''), NULLIF(m.file_size, 0), NULLIF(m.file_type, ''),
	       NULLIF(m.duration, 0)::integer, m.reference, $12, $12
	  FROM input m JOIN conv c ON c.low = m.low AND c.high = m.high
	 ORDER BY m.reference
	ON CONFLICT (reference) DO NOTHING
	RETURNING reference, id, conversation_id, created_at`

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
