// Package acceptance accepts a send: it validates the request, answers a
// repeated Idempotency-Key with its first answer, checks the recipient on
// the network, and stores the message (queued) with its delivery job, or
// refuses it with the reason the client reads. It returns domain values
// (Result); the doors render them.
//
// A send is validated in full first (sendrequest.SendRequest.Validate:
// every field error at once, nothing touched). Then: an Idempotency-Key already answered replays its answer;
// the recipient is checked on the network (lookup.Check, the rule the
// contacts lookup uses), outside any transaction so that no database
// connection is held while the network answers. The lookup needs the
// sender's phone: the request's, or the one this process remembers for the
// sender's id (a sender's phone never changes), or else the sender's row,
// read and checked first. Then one transaction accepts the message: the
// counter statement (acceptVariant), the message's insert after it
// (insert_message) and the insert of its
// delivery job (River's, in the same transaction; on Citus into the
// tenant's job outbox, which moves it into River after the commit:
// docs/scaling.md, §Jobs):
//
//  1. the sender, which must be active (the sender errors are worded from
//     its row when it is not: sender_not_found, sender_not_active,
//     sender_owner_unverified), its daily limit its override or the
//     organization's default, which the caller passes (the request read the
//     organization);
//  2. the daily limit: UPDATE ... SET used = used + 1 WHERE used < limit on
//     the day's counter (created first when a day's first send finds none),
//     so concurrent sends never pass the limit (429 daily_limit_exceeded
//     when it refuses);
//  3. the message row (queued), inserted only when the steps before it
//     succeeded, and then its delivery job (Jobs.InsertManyFastTx, in the
//     same transaction: no message without its job, no job without its
//     message).
//
// Each statement reads and writes the tenant's schema alone, by steps that
// Citus routes to the tenant's node (no INSERT step in a statement with
// CTEs, no coordinator table): docs/scaling.md, §A worker node down.
//
// Sends of one tenant that arrive while its earlier ones are in the database
// share one transaction (acceptBatch, accept_batch): each sender's counter is
// raised once for all its messages, all or none; whatever that statement
// does not accept is decided again by the one-message statement.
//
// The sender row is not locked: a suspension that commits while a send is
// being accepted may let that one message in, and its delivery then fails it
// sender_not_active (the delivery re-checks the sender). With an
// Idempotency-Key the same statements run in a transaction that first claims
// the key (so concurrent repeats of one key queue on its unique index and the
// later ones read the answer) and then stores the answer under it.
//
// A send with send_at is scheduled instead (schedule.go): stored as
// scheduled with its release job, nothing counted. Its release
// (ReleaseScheduled, release.go) runs the checks of a send made at that
// moment through Check (outside a transaction) and Release (the acceptance
// statement's release variant, which turns the locked scheduled row
// queued); Cancel ends it before. Campaigns release their messages through
// the same Check and Release.
//
// The statements (acceptance, alone or batched; idempotency keys) take $n
// arguments and go through db.Prepared, which keeps them prepared on each
// pool connection up to a bound, so that Postgres parses, analyses and
// plans them once per connection instead of at every run. Their texts name
// the tenant's schema, so each tenant has texts of its own.
package acceptance

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/batch"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/consent"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/idempotency"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/sqlq"
	"github.com/bizmsg/platform/platform/webhooks"
)

// Senders is what acceptance needs of the sender-number service, to word
// the sender errors; *senders.Service is one.
type Senders interface {
	Resolve(ctx context.Context, t db.Tenant, ref senders.SenderRef) (senders.Sender, error)
}

// Jobs inserts the delivery jobs of accepted messages in their acceptance
// transaction: the job outbox (joboutbox.Outbox) is one, the process's
// River client another.
type Jobs interface {
	InsertManyFastTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) (int, error)
}

// Config configures a Service.
type Config struct {
	// Prepared runs the statements of acceptance and idempotency keys
	// (prepared per connection, up to its bound). Required.
	Prepared *db.Prepared
	// Senders resolves sender numbers for the send path's errors. Required.
	Senders Senders
	// Network is the messaging network: the recipient's lookup. Required.
	Network network.Network
	// Jobs inserts each accepted message's delivery job in its acceptance
	// transaction. Required.
	Jobs Jobs
	// SenderCache bounds how many senders the process remembers the phone
	// of (see senderCache). Default 100,000.
	SenderCache int
	// Batch bounds the acceptance batches of a tenant (see acceptBatch):
	// sends without an Idempotency-Key that arrive while the tenant's
	// earlier ones are being stored share one statement. Defaults 64 and 2
	// (batch.Config).
	Batch batch.Config
	// ReleaseBatch bounds the release batches of a tenant (see
	// releaseBatch): the scheduled sends of a tenant released at the same
	// time in this process share a read and a transaction. Defaults 64
	// and 2 (batch.Config).
	ReleaseBatch batch.Config
	// IdempotencyTTL is how long an Idempotency-Key is remembered. Default 24 h.
	IdempotencyTTL time.Duration
	// ServiceWindow is the network's service window (docs/api.md, §Service
	// window): with one, a message that is not a template is accepted only
	// when the recipient wrote to the sender within it. 0 (the default): no
	// window.
	ServiceWindow time.Duration
	// Templates resolves the template of a send of type template. Nil:
	// such sends fail.
	Templates Templates
	// Clock is the time source of acceptance (the UTC day of the daily
	// limit), of scheduled sends' releases and of idempotency keys.
	// Default clock.Real{}.
	Clock clock.Clock
	// Events records the webhook events of scheduled sends: message.failed
	// of a release refused, message.canceled of a cancellation, each in
	// the transaction of its change. Nil records none.
	Events webhooks.Emitter
	// Routed stages a campaign tick's messages (ReleaseMany) by multi-row
	// VALUES inserts, which Citus routes to the tenant's node, instead of
	// one insert from the arrays, which it copies there in a two-phase
	// commit (docs/scaling.md, §Two-phase commits). platform/app sets it
	// on a Citus coordinator.
	Routed bool
}

// queries are the package's statements (named queries, run through
// sqlq's Pgx and db.Prepared), the acceptance statement's variants among
// them (acceptVariant), and their fragments.
//
//go:embed queries/*.sql queries/fragments/*.sql
var queries embed.FS

// loadQueries reads the package's named queries, with messages' column
// list (?{message_columns}).
func loadQueries() (*sqlq.Queries, error) {
	cols, err := messages.ColumnsFragment()
	if err != nil {
		return nil, err
	}
	return sqlq.Load(queries, "queries", cols)
}

// Service accepts sends. It is safe for concurrent use.
type Service struct {
	q       *sqlq.Queries
	keys    *idempotency.Store
	prep    *db.Prepared
	senders Senders
	net     network.Network
	jobs    Jobs
	known   *senderCache
	// acceptances batches the sends of each tenant (acceptBatch).
	acceptances *batch.Batcher[db.Tenant, pendingSend, outcome[Result]]
	// releases batches the scheduled sends' releases of each tenant
	// (releaseBatch).
	releases *batch.Batcher[db.Tenant, pendingRelease, outcome[string]]
	clock    clock.Clock
	// changes records the events of scheduled sends (Config.Events).
	changes messages.Changes
	// counters reads the organization's limits and creates missing
	// daily counters.
	counters *messages.Counters
	// optOuts takes the recipients' opt-out locks (lockOptOuts).
	optOuts consent.ShareLocker
	// windowSecs is Config.ServiceWindow in seconds, the statements'
	// window_secs.
	windowSecs float64
	cfg        Config
}

// New validates cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.Prepared == nil:
		return nil, errors.New("acceptance: Config.Prepared is required")
	case cfg.Senders == nil:
		return nil, errors.New("acceptance: Config.Senders is required")
	case cfg.Network == nil:
		return nil, errors.New("acceptance: Config.Network is required")
	case cfg.Jobs == nil:
		return nil, errors.New("acceptance: Config.Jobs is required")
	}
	defaults.Positive(&cfg.SenderCache, 100_000)
	defaults.Positive(&cfg.IdempotencyTTL, 24*time.Hour)
	defaults.Clock(&cfg.Clock)
	q, err := loadQueries()
	if err != nil {
		return nil, fmt.Errorf("acceptance: %w", err)
	}
	keys, err := idempotency.New(idempotency.Config{Prepared: cfg.Prepared, TTL: cfg.IdempotencyTTL})
	if err != nil {
		return nil, fmt.Errorf("acceptance: %w", err)
	}
	optOuts, err := consent.LoadShareLocker()
	if err != nil {
		return nil, fmt.Errorf("acceptance: %w", err)
	}
	counters, err := messages.NewCounters()
	if err != nil {
		return nil, fmt.Errorf("acceptance: %w", err)
	}
	s := &Service{
		q:        q,
		keys:     keys,
		prep:     cfg.Prepared,
		senders:  cfg.Senders,
		net:      cfg.Network,
		jobs:     cfg.Jobs,
		known:    newSenderCache(cfg.SenderCache),
		clock:    cfg.Clock,
		changes:  messages.Changes{Prepared: cfg.Prepared, Events: cfg.Events},
		counters: counters,
		optOuts:  optOuts,
		cfg:      cfg,

		windowSecs: cfg.ServiceWindow.Seconds(),
	}
	s.acceptances = batch.New(s.acceptBatch, cfg.Batch)
	s.releases = batch.New(s.releaseBatch, cfg.ReleaseBatch)
	return s, nil
}

// lockOptOuts takes, in tx, the opt-out locks of the recipients' phones in
// share mode (consent.ShareLocker), in a statement before the acceptance
// statement that reads the list: that statement's snapshot is then taken
// after the locks are granted, so an opt-out that committed before sees
// itself read, and one that comes after waits for this transaction's
// commit (docs/design.md, §Consent).
func (s *Service) lockOptOuts(ctx context.Context, tx pgx.Tx, t db.Tenant, phones ...string) error {
	stmt, args, err := s.optOuts.Statement(t, phones...)
	if err == nil {
		err = s.prep.Exec(ctx, tx, stmt, args...)
	}
	if err != nil {
		return fmt.Errorf("lock the opt-outs of %d recipients: %w", len(phones), err)
	}
	return nil
}
