// Package throttle paces message delivery with one token bucket per sender
// number (docs/api.md, §Delivery: configurable rate and burst, default 20/s
// burst 40).
//
// A delivery job reserves its token instead of polling for one: Reserve takes
// the next token of the bucket, even one that is only due in the future, and
// says how long until it is due. The job then waits that long (short delays)
// or snoozes once for exactly that long, and finds its token waiting when it
// runs again, because the reservation is remembered under the job's ticket.
// Snoozing whenever the bucket is empty would instead cost a database round
// trip per empty look (docs/design.md, §Throttle: reserve, do not poll).
//
// Limiter is the seam. Shared keeps the buckets in Postgres (platform/pace),
// so a sender's rate holds in total across any number of worker processes;
// the service runs on it. Local keeps them in one process's memory (N worker
// processes would together deliver up to N times the rate for one sender): it
// is the default of a delivery.Service built without one, and the measure of
// what sharing costs in the benchmark.
package throttle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/pace"
)

// Limit is one bucket's refill rate (tokens per second) and size, as
// pace.Limit (Validate reports whether it is usable).
type Limit = pace.Limit

// Limiter hands out tokens of named buckets.
type Limiter interface {
	// Reserve takes the next token of the bucket key, limited by l, on behalf
	// of ticket (a delivery job's id) and returns how long until the token is
	// due; zero means now. Reserving again with a ticket whose token is still
	// remembered returns the remaining delay of that token (zero once due) and
	// takes nothing, so a job that snoozed for its delay does not pay twice.
	// A changed l applies to the bucket from now on.
	Reserve(ctx context.Context, key, ticket string, l Limit) (time.Duration, error)
}

// Config configures a Local limiter.
type Config struct {
	// Now is the time source. Default time.Now. Buckets pace real deliveries,
	// so this is wall-clock time even where the platform clock is faked.
	Now func() time.Time
	// TicketTTL is how long a reservation stays remembered after it falls due,
	// for the job that made it to come back (a snoozed job may run a little
	// late). Default 1 minute.
	TicketTTL time.Duration
	// SweepInterval is how often Reserve drops full buckets and forgotten
	// tickets, so memory follows the senders actually sending. Default 1 minute.
	SweepInterval time.Duration
}

// Local is an in-process Limiter over golang.org/x/time/rate. It is safe for
// concurrent use. Its buckets are per process; see the package comment.
type Local struct {
	cfg Config

	mu        sync.Mutex
	buckets   map[string]*rate.Limiter
	tickets   map[string]time.Time // ticket → when its token is due
	lastSweep time.Time
}

var _ Limiter = (*Local)(nil)

// NewLocal returns an in-process Limiter. It keeps a shape of its own, no
// error: every field of cfg has a default and nothing is required, so
// there is nothing it could fail on.
func NewLocal(cfg Config) *Local {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	defaults.Positive(&cfg.TicketTTL, time.Minute)
	defaults.Positive(&cfg.SweepInterval, time.Minute)
	return &Local{
		cfg:       cfg,
		buckets:   make(map[string]*rate.Limiter),
		tickets:   make(map[string]time.Time),
		lastSweep: cfg.Now(),
	}
}

// Reserve implements Limiter. It never blocks.
func (l *Local) Reserve(_ context.Context, key, ticket string, lim Limit) (time.Duration, error) {
	if err := lim.Validate(); err != nil {
		return 0, err
	}
	if key == "" {
		return 0, errors.New("throttle: empty bucket key")
	}
	now := l.cfg.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) >= l.cfg.SweepInterval {
		l.sweep(now)
	}
	if ticket != "" {
		if due, ok := l.tickets[ticket]; ok {
			if now.Before(due) {
				return due.Sub(now), nil
			}
			// Due: the token is the job's to use now. It is used up with
			// this call: a later attempt of the same job pays for its own.
			delete(l.tickets, ticket)
			return 0, nil
		}
	}
	b := l.buckets[key]
	if b == nil {
		b = rate.NewLimiter(rate.Limit(lim.Rate), lim.Burst)
		l.buckets[key] = b
	} else {
		if b.Limit() != rate.Limit(lim.Rate) {
			b.SetLimitAt(now, rate.Limit(lim.Rate))
		}
		if b.Burst() != lim.Burst {
			b.SetBurstAt(now, lim.Burst)
		}
	}
	r := b.ReserveN(now, 1)
	if !r.OK() {
		return 0, fmt.Errorf("throttle: bucket %q cannot grant a token", key)
	}
	d := r.DelayFrom(now)
	if d > 0 && ticket != "" {
		l.tickets[ticket] = now.Add(d)
	}
	return d, nil
}

// sweep drops buckets that are full again (a new bucket starts full, so
// dropping one changes nothing) and tickets nobody came back for.
func (l *Local) sweep(now time.Time) {
	l.lastSweep = now
	for k, b := range l.buckets {
		if b.TokensAt(now) >= float64(b.Burst()) {
			delete(l.buckets, k)
		}
	}
	for t, due := range l.tickets {
		if now.Sub(due) > l.cfg.TicketTTL {
			delete(l.tickets, t)
		}
	}
}

// Len reports how many buckets and remembered tickets the limiter holds, for
// tests and metrics.
func (l *Local) Len() (buckets, tickets int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets), len(l.tickets)
}

// Shared is a Limiter over pace.Store: the buckets are rows in Postgres, so
// a sender's rate holds in total across every worker process on the
// database (docs/design.md, §Rates across processes). A bucket key is
// prefixed "sender:" in the store.
type Shared struct {
	store *pace.Store
}

var _ Limiter = (*Shared)(nil)

// SharedConfig configures a Shared limiter.
type SharedConfig struct {
	// Store keeps the buckets and tickets. Required.
	Store *pace.Store
}

// NewShared validates cfg and returns a Limiter over its store.
func NewShared(cfg SharedConfig) (*Shared, error) {
	if cfg.Store == nil {
		return nil, errors.New("throttle: SharedConfig.Store is required")
	}
	return &Shared{store: cfg.Store}, nil
}

// Reserve implements Limiter with one statement (pace.Store.Take).
func (s *Shared) Reserve(ctx context.Context, key, ticket string, lim Limit) (time.Duration, error) {
	d, err := s.store.Take(ctx, "sender:"+key, ticket, lim)
	if err != nil {
		return 0, fmt.Errorf("throttle: %w", err)
	}
	return d, nil
}
