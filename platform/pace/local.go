package pace

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/bizmsg/platform/platform/defaults"
)

// LocalConfig configures a Local.
type LocalConfig struct {
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

// Local is Store.Take's counterpart in one process's memory, over
// golang.org/x/time/rate: the same reservations and tickets, but its
// buckets are the process's own (N worker processes would together deliver
// up to N times a sender's rate). A delivery.Service built without a
// throttle uses it, and so do tests that need no database. It is safe for
// concurrent use.
type Local struct {
	cfg LocalConfig

	mu        sync.Mutex
	buckets   map[string]*rate.Limiter
	tickets   map[string]time.Time // ticket → when its token is due
	lastSweep time.Time
}

// NewLocal returns a Local. It keeps a shape of its own, no error: every
// field of cfg has a default and nothing is required, so there is nothing
// it could fail on.
func NewLocal(cfg LocalConfig) *Local {
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

// Take takes the next token of bucket key, limited by lim, on behalf of
// ticket, as Store.Take does: even a token due only in the future, saying
// how long until it is due (zero: now); a ticket whose token is still
// remembered gets its remaining delay (zero once due, using it up) and
// takes nothing. A changed lim applies to the bucket from now on. It never
// blocks.
func (l *Local) Take(_ context.Context, key, ticket string, lim Limit) (time.Duration, error) {
	if err := lim.Validate(); err != nil {
		return 0, err
	}
	if key == "" {
		return 0, errors.New("pace: empty bucket key")
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
		return 0, fmt.Errorf("pace: bucket %q cannot grant a token", key)
	}
	d := r.DelayFrom(now)
	if d > 0 && ticket != "" {
		l.tickets[ticket] = now.Add(d)
	}
	return d, nil
}

// TakeAll is Take for each of slots, in order (Store.TakeAll's
// counterpart).
func (l *Local) TakeAll(ctx context.Context, slots []Slot) ([]time.Duration, []error) {
	out, errs := make([]time.Duration, len(slots)), make([]error, len(slots))
	for i, sl := range slots {
		out[i], errs[i] = l.Take(ctx, sl.Key, sl.Ticket, sl.Limit)
	}
	return out, errs
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
