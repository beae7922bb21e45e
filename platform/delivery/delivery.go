// Package delivery delivers accepted messages: it runs in the River worker
// (DeliverMessage, jobs.MessageDeliverer), claims a message in its
// conversation's order, takes a token from its sender's throttle, delivers
// it through the network and records the outcome, sent or failed, with the
// day's counters and the message's webhook events; Requeue makes a message
// that failed for lack of network deliverable again.
//
// DeliverMessage claims the message, unless an earlier message of its
// conversation is still queued (a lowered daily limit is honoured for
// messages not yet delivered), takes a token from the sender's bucket
// (waiting briefly, or snoozing once for exactly the delay), delivers with
// the reference "<schema>:<message id>" (messages.Reference, so a job run
// twice delivers once), and records the outcome with the day's status
// counters; then it carries the conversation on to its next message
// (order.go). The jobs of one tenant that run at the same time do this
// together (deliverBatch): one claim statement, one network batch, one sent
// record.
//
// The statements every message runs (the claim, the sent record) are named
// queries (statements.go) written for pgx, and go through db.Prepared,
// which keeps them prepared on each pool connection up to a bound; the
// rarer paths (claimLocked, failures) go through it too, in pgx
// transactions where they change a message, so that an event can be
// recorded with the change (messages.Changes).
package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/bizmsg/platform/platform/batch"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/pace"
	"github.com/bizmsg/platform/platform/sqlq"
	"github.com/bizmsg/platform/platform/webhooks"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
)

// Jobs inserts delivery jobs: the job that carries a conversation on when
// a run may wait no longer (handOver). The process's River client is one.
type Jobs interface {
	InsertManyFastTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) (int, error)
}

// Config configures a Service.
type Config struct {
	// DB is the database: handOver's transaction runs on its pool. Required.
	DB *db.DB
	// Prepared runs the claim, the records and the failures (prepared per
	// connection, up to its bound). Required: on the same database as DB.
	Prepared *db.Prepared
	// Network is the messaging network. Required.
	Network network.Network
	// Jobs inserts the delivery jobs handOver makes. Required.
	Jobs Jobs
	// Throttle paces deliveries per sender: a pace.Store in the service
	// (the buckets shared by every process). Default: a pace.Local.
	Throttle Throttle
	// SenderRate and SenderBurst are the throttle of organizations without
	// their own (central.organizations.sender_rate/sender_burst). Defaults
	// 20/s and 40 (docs/api.md, §Delivery).
	SenderRate  float64
	SenderBurst int
	// Batch bounds the delivery batches of a tenant (see deliverBatch): at
	// most MaxSize jobs each, MaxInFlight at once per tenant. Defaults 64
	// and 2 (batch.Config).
	Batch batch.Config
	// MaxInlineWait is how long a delivery job's run may wait for throttle
	// tokens and go on with its conversation's next messages (order.go): a
	// token due later snoozes the job for exactly the delay, and past it the
	// job hands its conversation's next message to a new job. Default 1 s
	// (queue.DeliveryThrottleWait, part of the run's bound).
	MaxInlineWait time.Duration
	// ClaimLease is how long a delivery job's claim of a message holds it
	// against other jobs' claims: the longest a live job's run lasts, so
	// that a job killed mid-delivery is taken over once it has passed (its
	// own rescued run takes it back at once), and how long the job of a
	// message another job's claim holds waits before it looks again.
	// Default 10 s
	// (queue.Config.DeliveryRescueAfter's default).
	ClaimLease time.Duration
	// OrderWindow bounds how long a message whose delivery keeps failing
	// holds the later messages of its conversation (a sender number and a
	// recipient, docs/api.md §Delivery order) back: from its first transient
	// failure (failing_since), so that a message stuck queued (its attempts
	// spread over a long outage) delays the others that long at most, while
	// a message that merely waits (a slow queue, a throttled sender) always
	// keeps its place. Default 10 minutes: the first nine retries of a
	// transient network failure (1 s doubling) fit in it.
	OrderWindow time.Duration
	// Events records a webhook event of every status change of a message
	// delivery makes (message.sent, .delivered, .failed) in the transaction
	// of the change (messages.Changes). Nil records none.
	Events webhooks.Emitter
	// Clock is the time source of delivery times. Default clock.Real{}.
	Clock clock.Clock
	// Logger. Default slog.Default().
	Logger *slog.Logger
}

// Service delivers messages. It is safe for concurrent use.
type Service struct {
	pool     *pgxpool.Pool
	prep     *db.Prepared
	q        *sqlq.Queries
	net      network.Network
	jobs     Jobs
	throttle Throttle
	changes  messages.Changes
	counters *messages.Counters
	// deliveries batches the deliveries of each tenant (deliverBatch).
	deliveries *batch.Batcher[db.Tenant, pendingDelivery, delivered]
	clock      clock.Clock
	log        *slog.Logger
	cfg        Config
}

// New validates cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.DB == nil:
		return nil, errors.New("delivery: Config.DB is required")
	case cfg.Prepared == nil:
		return nil, errors.New("delivery: Config.Prepared is required")
	case cfg.Network == nil:
		return nil, errors.New("delivery: Config.Network is required")
	case cfg.Jobs == nil:
		return nil, errors.New("delivery: Config.Jobs is required")
	}
	if cfg.Throttle == nil {
		cfg.Throttle = pace.NewLocal(pace.LocalConfig{})
	}
	defaults.Positive(&cfg.SenderRate, 20)
	defaults.Positive(&cfg.SenderBurst, 40)
	defaults.Positive(&cfg.MaxInlineWait, time.Second)
	defaults.Positive(&cfg.OrderWindow, 10*time.Minute)
	defaults.Positive(&cfg.ClaimLease, 10*time.Second)
	defaults.Clock(&cfg.Clock)
	defaults.Logger(&cfg.Logger)
	q, err := loadQueries()
	if err != nil {
		return nil, err
	}
	counters, err := messages.NewCounters()
	if err != nil {
		return nil, fmt.Errorf("delivery: %w", err)
	}
	s := &Service{
		counters: counters,
		pool:     cfg.DB.Pool,
		prep:     cfg.Prepared,
		q:        q,
		net:      cfg.Network,
		jobs:     cfg.Jobs,
		throttle: cfg.Throttle,
		changes:  messages.Changes{Prepared: cfg.Prepared, Events: cfg.Events},
		clock:    cfg.Clock,
		log:      cfg.Logger,
		cfg:      cfg,
	}
	s.deliveries = batch.New(s.deliverBatch, cfg.Batch)
	return s, nil
}

// minBatch is the smallest batch that runs as one statement, as in package
// acceptance (whose minBatch has the figures): fewer deliveries run as
// one-message statements side by side.
const minBatch = 4

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Throttle paces deliveries: TakeAll takes, for each slot, the next token of
// a sender's bucket for a message's ticket, even one due only later, and
// says how long until it is due; the ticket's later take finds its token
// instead of taking another (pace.Store: shared by every process, one
// statement for a batch's tokens; pace.Local: one process's).
type Throttle interface {
	TakeAll(ctx context.Context, slots []pace.Slot) ([]time.Duration, []error)
}
