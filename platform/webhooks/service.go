package webhooks

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/batch"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/sqlq"
	"github.com/bizmsg/platform/platform/yield"
)

// UserAgent is the User-Agent of every webhook request.
const UserAgent = "bizmsg-webhooks/1.0"

// Config configures a Service: DB and Jobs are required, every other
// field takes its default at zero (docs/api.md, §Webhooks).
type Config struct {
	// DB holds the tenants' webhook tables. Required.
	DB *db.DB
	// Jobs inserts the delivery jobs in the transactions that write the
	// deliveries (the job outbox; the process's River client would do on
	// one server). Required.
	Jobs queue.Inserter
	// Clock stamps events and deliveries. Default clock.Real{}.
	Clock clock.Clock
	// Logger receives disabled endpoints and failed expansions. Default
	// slog.Default().
	Logger *slog.Logger
	// Timeout bounds one attempt: connecting, sending the request and
	// reading the answer. Only a 2xx answer within it is a success.
	// Default 10 s.
	Timeout time.Duration
	// MaxInFlight is the most attempts to one endpoint that run at once in
	// this process; an attempt that finds them all busy waits (its job
	// snoozes about a second) without holding a worker. Default 4.
	MaxInFlight int
	// RetryFor is how long after its creation a delivery is retried; the
	// first attempt that fails after it fails the delivery. Default 24 h.
	RetryFor time.Duration
	// DisableAfter disables an endpoint whose attempts have all failed for
	// this long (since the first failure after its last success).
	// Default 24 h.
	DisableAfter time.Duration
	// SecretOverlap is how long the previous secret still signs after a
	// rotation. Default 24 h.
	SecretOverlap time.Duration
	// RetryBase and RetryMax are the backoff of failed attempts:
	// RetryBase·2^(attempt-1), at most RetryMax, ±10%. Defaults
	// queue.WebhookRetryBase (5 s) and queue.WebhookRetryMax (1 h).
	RetryBase time.Duration
	RetryMax  time.Duration
	// MaxEndpoints is the most endpoints an organization may have.
	// Default 20.
	MaxEndpoints int
	// Retention is how long finished deliveries (and their events) are
	// kept in the log (Purge). Default 30 days.
	Retention time.Duration
	// AllowPrivate lets endpoints live on loopback, private, link-local
	// and other reserved addresses (WEBHOOK_ALLOW_PRIVATE): development and
	// tests only. New logs a warning when it is set.
	AllowPrivate bool
	// WrapTransport, when set, wraps the guarded HTTP transport (tests
	// observe or delay requests with it). The address guard stays below
	// it, in the dialer.
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Yield admits attempts: while the process's API and send path are
	// busy (their batches count their runs on it), it admits its BusyRate
	// a second in this process, and the
	// others wait in their workers, reading nothing (up to 10 s, then their
	// jobs snooze). nil admits every attempt at once.
	Yield *yield.Gate
	// OutboxBatch is the most outbox rows (the events of one transaction
	// each) one expansion transaction turns into deliveries while the
	// yield gate is open; while it is closed, one. Default 64.
	OutboxBatch int
	// Routed makes the outbox expansion run as statements Citus routes to
	// the tenant's node alone (routed.go): set on a Citus coordinator. On
	// one server the expansion is one statement.
	Routed bool
	// Expansions is the most outbox expansion transactions this process
	// runs at once, over every organization. Default 2.
	Expansions int
	// Batch bounds, per organization, the runs of attempts' reads and of
	// their recorded successes that share a statement. Defaults 64 and 2
	// (batch.Config).
	Batch batch.Config
	// Prepared runs the service's pgx statements (those of Emit, the
	// outbox, attempts and redeliveries). Default: db.NewPrepared on
	// the DB with its default bound (the prepared statements of a
	// connection are shared by every db.Prepared of the process).
	Prepared *db.Prepared
}

func (c *Config) setDefaults() {
	defaults.Positive(&c.Timeout, 10*time.Second)
	defaults.Positive(&c.MaxInFlight, 4)
	defaults.Positive(&c.RetryFor, 24*time.Hour)
	defaults.Positive(&c.DisableAfter, 24*time.Hour)
	defaults.Positive(&c.SecretOverlap, 24*time.Hour)
	defaults.Positive(&c.RetryBase, queue.WebhookRetryBase)
	defaults.Positive(&c.RetryMax, queue.WebhookRetryMax)
	defaults.Positive(&c.MaxEndpoints, 20)
	defaults.Positive(&c.Retention, 30*24*time.Hour)
	defaults.Positive(&c.OutboxBatch, 64)
	defaults.Positive(&c.Expansions, 2)
	defaults.Clock(&c.Clock)
	defaults.Logger(&c.Logger)
}

// Service manages an organization's webhook endpoints, records events
// (Emit) and delivers them (Attempt, run by the River worker). It is safe
// for concurrent use.
type Service struct {
	db     *db.DB
	sql    *db.Prepared
	q      *sqlq.Queries
	jobs   queue.Inserter
	clock  clock.Clock
	log    *slog.Logger
	cfg    Config
	client *http.Client
	// places holds each endpoint's places in this process (takePlace),
	// turns the channel closed at a key's next recorded attempt
	// (awaitTurn).
	places *waiters[placeKey, chan struct{}]
	turns  *waiters[turnKey, chan struct{}]
	outbox *expander
	// loads and successes share statements between concurrent attempts
	// of one tenant (batches.go).
	loads     *batch.Batcher[db.Tenant, loadItem, loaded]
	successes *batch.Batcher[db.Tenant, success, struct{}]
}

// New returns the webhook service on cfg.DB (its named queries run on bun,
// or as pgx statements through cfg.Prepared: queries), inserting
// delivery jobs with cfg.Jobs in the transactions that write the
// deliveries. Close stops its outbox expansions.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.DB == nil:
		return nil, errors.New("webhooks: New needs a DB")
	case cfg.Jobs == nil:
		return nil, errors.New("webhooks: New needs Jobs (a River client)")
	}
	cfg.setDefaults()
	if cfg.Prepared == nil {
		var err error
		if cfg.Prepared, err = db.NewPrepared(db.PreparedConfig{DB: cfg.DB}); err != nil {
			return nil, fmt.Errorf("webhooks: %w", err)
		}
	}
	if cfg.AllowPrivate {
		cfg.Logger.Warn("webhooks may be sent to loopback, private and link-local addresses (WEBHOOK_ALLOW_PRIVATE): use this in development and tests only")
	}
	q, err := sqlq.Load(queries, "queries")
	if err != nil {
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	s := &Service{
		db:     cfg.DB,
		sql:    cfg.Prepared,
		q:      q,
		jobs:   cfg.Jobs,
		clock:  cfg.Clock,
		log:    cfg.Logger,
		cfg:    cfg,
		client: newClient(cfg),
		places: newWaiters[placeKey](func() chan struct{} { return make(chan struct{}, cfg.MaxInFlight) }),
		turns:  newWaiters[turnKey](func() chan struct{} { return make(chan struct{}) }),
	}
	if s.outbox, err = newExpander(s); err != nil {
		return nil, err
	}
	s.loads = batch.New(s.loadMany, cfg.Batch)
	s.successes = batch.New(s.recordSuccesses, cfg.Batch)
	return s, nil
}

// AttemptTimeout is the longest one attempt takes apart from its reads and
// writes: its waits in the worker (at the yield gate, for its key's turn,
// for a place at its endpoint) and its request (Config.Timeout). The
// worker bounds a job's run a little above it.
func (s *Service) AttemptTimeout() time.Duration {
	return yieldWait + turnWait + capWait + s.cfg.Timeout
}

// SecretOverlap is how long a secret replaced by RotateSecret still signs
// beside the new one (Config.SecretOverlap).
func (s *Service) SecretOverlap() time.Duration { return s.cfg.SecretOverlap }

// queries are the package's named queries (platform/sqlq). The statements
// of the send path, of attempts and of the outbox, and those run in
// another package's pgx transaction (Emit), run as pgx statements
// (sqlq.Queries.Pgx) through Config.Prepared, prepared on their
// connections; the endpoints' management and the delivery log are bun's.
//
//go:embed queries/*.sql
var queries embed.FS

// query runs named query name for t with args (in tx, or on the pool when
// tx is nil) through Config.Prepared and hands its rows to scan.
func (s *Service) query(ctx context.Context, tx pgx.Tx, t db.Tenant, name string, args sqlq.Args, scan func(db.Rows) error) error {
	return s.sql.Named(ctx, tx, s.q, name, t.Quoted(), args, scan)
}

// queryFirst runs named query name as query does and hands its first row,
// if it has one, to scan; it reports whether there was one.
func (s *Service) queryFirst(ctx context.Context, tx pgx.Tx, t db.Tenant, name string, args sqlq.Args, scan func(db.Rows) error) (bool, error) {
	text, vals, err := s.q.Pgx(name, t.Quoted(), args)
	if err != nil {
		return false, err
	}
	return s.sql.QueryFirst(ctx, tx, text, vals, scan)
}

// queryRow runs named query name as query does and scans its first row
// into dest; it reports whether there was one.
func (s *Service) queryRow(ctx context.Context, tx pgx.Tx, t db.Tenant, name string, args sqlq.Args, dest ...any) (bool, error) {
	return s.queryFirst(ctx, tx, t, name, args, func(r db.Rows) error { return r.Scan(dest...) })
}

// exec runs named query name as query does and discards its rows.
func (s *Service) exec(ctx context.Context, tx pgx.Tx, t db.Tenant, name string, args sqlq.Args) error {
	return s.sql.Named(ctx, tx, s.q, name, t.Quoted(), args, nil)
}
