// Package pace keeps rates that hold across processes: the generic cell rate
// algorithm (GCRA) over one row per rate-limited thing in Postgres
// (central.pace), shared by every api and worker process on the database.
//
// A rate r with burst b is an emission interval T = 1/r and a tolerance
// τ = b·T. Each thing has a theoretical arrival time (tat): the time its
// bucket would be full again. An event at time now moves it to
// max(tat, now) + T; the event is due at that new tat − τ. A bucket is full
// when tat ≤ now, so b events are due at once and each later one T after the
// one before: the token bucket's behaviour, with one timestamp and one
// statement per event instead of a process's memory. Time is the database's
// (statement_timestamp()), so processes with skewed clocks agree.
//
// Two kinds of event:
//   - Take (the delivery throttle) always takes the next slot, even one due
//     in the future, and says how long until it is due. A caller that waits
//     for it elsewhere (a snoozed job) names a ticket: its next Take finds
//     the reserved slot under the ticket instead of taking another.
//   - Allow (the API's request rate) takes the slot only when it is due now,
//     else refuses and says when it will be.
//
// The table is UNLOGGED: no WAL and no commit flush per event, and after a
// crash of the database server every bucket starts full (docs/design.md,
// §Rates across processes).
package pace

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Limit is a rate: Rate events a second, at most Burst at once.
type Limit struct {
	Rate  float64
	Burst int
}

// Validate reports whether l describes a usable rate.
func (l Limit) Validate() error {
	if !(l.Rate > 0) || math.IsInf(l.Rate, 0) {
		return fmt.Errorf("pace: rate must be a positive number, got %v", l.Rate)
	}
	if l.Burst < 1 {
		return fmt.Errorf("pace: burst must be at least 1, got %d", l.Burst)
	}
	return nil
}

// interval is T, the time between two events at the full rate, in seconds.
func (l Limit) interval() float64 { return 1 / l.Rate }

// tolerance is τ = Burst·T, in seconds: how far ahead of now tat may run.
func (l Limit) tolerance() float64 { return float64(l.Burst) / l.Rate }

// Config configures a Store.
type Config struct {
	// TicketTTL is how long a reserved slot stays under its ticket after it
	// falls due, for the job that reserved it to come back (a snoozed job may
	// run a little late). Default 1 minute.
	TicketTTL time.Duration
	// SweepInterval is how often a process deletes full buckets and
	// forgotten tickets, so the table holds only what is busy. Default 1
	// minute.
	SweepInterval time.Duration
	// Now is the process's clock, used only to decide when to sweep. Default
	// time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.TicketTTL <= 0 {
		c.TicketTTL = time.Minute
	}
	if c.SweepInterval <= 0 {
		c.SweepInterval = time.Minute
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Store is the shared rate state, in central.pace and central.pace_tickets.
// It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	cfg  Config

	mu        sync.Mutex
	lastSweep time.Time
}

// New returns a Store over pool.
func New(pool *pgxpool.Pool, cfg Config) (*Store, error) {
	if pool == nil {
		return nil, errors.New("pace: a pool is required")
	}
	cfg.setDefaults()
	return &Store{pool: pool, cfg: cfg, lastSweep: cfg.Now()}, nil
}

// takeSQL takes the next slot of key ($1) for ticket ($2, may be empty) at
// interval $3 and tolerance $4 (seconds), and returns the seconds until the
// slot is due (zero: now). Its steps:
//   - prior: a slot this ticket reserved before; it is used instead of a new
//     one (and forgotten once due: used is the delete);
//   - b: without one, the key's tat moves to max(tat, now) + T (a missing
//     row is a full bucket), under the row's lock, so concurrent takes of one
//     key each get their own slot;
//   - due: the slot is due at the new tat − τ;
//   - keep: a slot due in the future is kept under the ticket.
const takeSQL = `WITH prior AS (
	  SELECT due FROM central.pace_tickets WHERE ticket = $2::text),
	used AS (
	  DELETE FROM central.pace_tickets WHERE ticket = $2::text AND due <= statement_timestamp()),
	b AS (
	  INSERT INTO central.pace AS p (key, tat)
	  SELECT $1::text, statement_timestamp() + $3::float8 * interval '1 second'
	   WHERE NOT EXISTS (SELECT FROM prior)
	  ON CONFLICT (key) DO UPDATE
	     SET tat = greatest(p.tat, statement_timestamp()) + $3::float8 * interval '1 second'
	  RETURNING tat),
	due AS (
	  SELECT coalesce((SELECT due FROM prior), (SELECT tat - $4::float8 * interval '1 second' FROM b)) AS at),
	keep AS (
	  INSERT INTO central.pace_tickets (ticket, due)
	  SELECT $2::text, at FROM due
	   WHERE $2::text <> '' AND NOT EXISTS (SELECT FROM prior) AND at > statement_timestamp()
	  ON CONFLICT (ticket) DO UPDATE SET due = excluded.due)
	SELECT greatest(extract(epoch FROM (SELECT at FROM due) - statement_timestamp()), 0)::float8`

// Take takes the next slot of key under l on behalf of ticket and returns
// how long until it is due; zero means now. Taking again with a ticket whose
// slot is still kept returns the time left until that slot (zero once due,
// when it is used up) and takes nothing. An empty ticket keeps nothing.
func (s *Store) Take(ctx context.Context, key, ticket string, l Limit) (time.Duration, error) {
	if err := l.Validate(); err != nil {
		return 0, err
	}
	if key == "" {
		return 0, errors.New("pace: empty key")
	}
	s.maybeSweep(ctx)
	var secs float64
	if err := s.pool.QueryRow(ctx, takeSQL, key, ticket, l.interval(), l.tolerance()).Scan(&secs); err != nil {
		return 0, fmt.Errorf("pace: take %q: %w", key, err)
	}
	return seconds(secs), nil
}

// Decision is what Allow decided.
type Decision struct {
	// Allowed tells whether the event took a slot.
	Allowed bool
	// Ahead is how far the key's tat is ahead of now after the decision: the
	// time until its bucket is full again.
	Ahead time.Duration
	// RetryAfter is, when refused, the time until the next slot is due.
	RetryAfter time.Duration
	// Remaining is how many more events are due now.
	Remaining int
}

// allowSQL takes the slot of key ($1) at interval $2 and tolerance $3
// (seconds) if it is due now. The upsert decides under the row's lock: a new
// row is a full bucket, so its first event is allowed; an existing tat moves
// to max(tat, now) + T only while that stays within τ of now, and the row
// comes back (allowed). Otherwise nothing changes, nothing comes back from
// the upsert, and cur reads the tat that refused it: FOR UPDATE reads the
// row's newest version (the one the upsert's lock holds, which concurrent
// events may have moved since this statement's snapshot), not the
// snapshot's.
const allowSQL = `WITH up AS (
	  INSERT INTO central.pace AS p (key, tat)
	  VALUES ($1::text, statement_timestamp() + $2::float8 * interval '1 second')
	  ON CONFLICT (key) DO UPDATE
	     SET tat = greatest(p.tat, statement_timestamp()) + $2::float8 * interval '1 second'
	   WHERE greatest(p.tat, statement_timestamp()) + $2::float8 * interval '1 second'
	         <= statement_timestamp() + $3::float8 * interval '1 second'
	  RETURNING tat),
	cur AS (
	  SELECT tat FROM central.pace WHERE key = $1::text AND NOT EXISTS (SELECT FROM up) FOR UPDATE)
	SELECT true, extract(epoch FROM tat - statement_timestamp())::float8 FROM up
	UNION ALL
	SELECT false, extract(epoch FROM tat - statement_timestamp())::float8 FROM cur`

// Allow takes a slot of key under l if one is due now, else refuses and says
// when one will be. The decision is exact across processes: it is made under
// the key's row lock.
func (s *Store) Allow(ctx context.Context, key string, l Limit) (Decision, error) {
	if err := l.Validate(); err != nil {
		return Decision{}, err
	}
	s.maybeSweep(ctx)
	var allowed bool
	var ahead float64
	err := s.pool.QueryRow(ctx, allowSQL, key, l.interval(), l.tolerance()).Scan(&allowed, &ahead)
	tau, t := l.tolerance(), l.interval()
	if errors.Is(err, pgx.ErrNoRows) {
		// Refused by a row that a concurrent event inserted after this
		// statement's snapshot, which cur cannot see (rare: only a new
		// bucket's first events race so). The refusal stands; when the next
		// slot is due is not known, and one interval is the estimate.
		return Decision{Ahead: seconds(t), RetryAfter: seconds(t)}, nil
	}
	if err != nil {
		return Decision{}, fmt.Errorf("pace: allow %q: %w", key, err)
	}
	d := Decision{Allowed: allowed, Ahead: seconds(ahead)}
	if allowed {
		d.Remaining = max(int(math.Floor((tau-ahead)/t+1e-9)), 0)
	} else {
		d.RetryAfter = seconds(ahead + t - tau)
	}
	return d, nil
}

// seconds converts a number of seconds into a Duration, zero when negative.
func seconds(s float64) time.Duration {
	if !(s > 0) {
		return 0
	}
	return time.Duration(math.Ceil(s * float64(time.Second)))
}

// maybeSweep deletes full buckets and forgotten tickets once per
// SweepInterval per process. A failed sweep is retried at the next interval:
// it only keeps rows that change nothing.
func (s *Store) maybeSweep(ctx context.Context) {
	now := s.cfg.Now()
	s.mu.Lock()
	if now.Sub(s.lastSweep) < s.cfg.SweepInterval {
		s.mu.Unlock()
		return
	}
	s.lastSweep = now
	s.mu.Unlock()
	_ = s.Sweep(ctx)
}

// Sweep deletes the buckets that are full again (a missing row is a full
// bucket, so this changes no decision) and the tickets whose slot fell due
// more than TicketTTL ago.
func (s *Store) Sweep(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM central.pace WHERE tat < statement_timestamp()`); err != nil {
		return fmt.Errorf("pace: sweep buckets: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM central.pace_tickets
		WHERE due < statement_timestamp() - $1::float8 * interval '1 second'`, s.cfg.TicketTTL.Seconds()); err != nil {
		return fmt.Errorf("pace: sweep tickets: %w", err)
	}
	return nil
}

// Len reports how many buckets and tickets the table holds, for tests and
// operators.
func (s *Store) Len(ctx context.Context) (buckets, tickets int, err error) {
	err = s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM central.pace), (SELECT count(*) FROM central.pace_tickets)`).
		Scan(&buckets, &tickets)
	if err != nil {
		return 0, 0, fmt.Errorf("pace: count: %w", err)
	}
	return buckets, tickets, nil
}
