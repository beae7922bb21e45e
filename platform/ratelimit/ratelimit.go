// Package ratelimit limits how fast one caller (an API key) may make requests,
// with a token bucket per caller, and tells the caller where it stands in the
// IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers):
//
//	RateLimit-Limit: 100          the bucket's size (burst)
//	RateLimit-Remaining: 57       whole requests left right now
//	RateLimit-Reset: 3            seconds until the bucket is full again
//	RateLimit-Policy: 100;w=2     burst 100 refilled over a 2 s window
//
// Limiter is the interface the HTTP middleware uses. Shared keeps the buckets
// in Postgres (platform/pace), so a key's limit holds in total across any
// number of API processes, in a statement of its own; the service decides
// the same buckets inside its key authentication instead (platform/keys,
// Config.Pace), and uses Decision and FromPace. Local keeps them in this
// process, for a Tenant API built without a shared store.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/pace"
)

// Limit is a token bucket's shape: Rate tokens a second, at most Burst saved.
type Limit struct {
	Rate  float64
	Burst int
}

// Valid reports whether the limit can be enforced (positive rate and burst).
func (l Limit) Valid() bool { return l.Rate > 0 && l.Burst >= 1 }

// window is the time an empty bucket takes to fill.
func (l Limit) window() time.Duration {
	return time.Duration(float64(l.Burst) / l.Rate * float64(time.Second))
}

// Decision is the outcome of one request against its bucket.
type Decision struct {
	// Allowed tells whether the request may proceed (it took a token).
	Allowed bool
	// Limit is the bucket the request was checked against.
	Limit Limit
	// Remaining is the whole number of tokens left after this request.
	Remaining int
	// Reset is the time until the bucket is full again.
	Reset time.Duration
	// RetryAfter is, for a refused request, the time until a token is due.
	RetryAfter time.Duration
}

// SetHeaders writes the RateLimit-* response header fields of d on h.
// Durations are rounded up to whole seconds, as the fields require.
func (d Decision) SetHeaders(h http.Header) {
	h.Set("RateLimit-Limit", strconv.Itoa(d.Limit.Burst))
	h.Set("RateLimit-Remaining", strconv.Itoa(d.Remaining))
	h.Set("RateLimit-Reset", strconv.FormatInt(ceilSeconds(d.Reset), 10))
	h.Set("RateLimit-Policy", strconv.Itoa(d.Limit.Burst)+";w="+strconv.FormatInt(max(ceilSeconds(d.Limit.window()), 1), 10))
}

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// Limiter decides whether the caller named key may make one more request
// under limit l.
type Limiter interface {
	Allow(ctx context.Context, key string, l Limit) (Decision, error)
}

// LocalConfig configures a Local limiter.
type LocalConfig struct {
	// Now is the time source. Default time.Now.
	Now func() time.Time
	// IdleAfter is how long a bucket that is full again stays in memory before
	// a sweep forgets it (a forgotten bucket comes back full, so forgetting a
	// full bucket changes nothing). Default 10 minutes.
	IdleAfter time.Duration
}

// shardCount spreads the buckets over independently locked maps, so
// concurrent requests of different keys rarely wait on one another.
const shardCount = 32

// Local is a Limiter that keeps the buckets in this process's memory. With
// several API processes each enforces the limit on the requests it serves.
type Local struct {
	cfg    LocalConfig
	seed   maphash.Seed
	shards [shardCount]shard
}

type shard struct {
	mu        sync.Mutex
	buckets   map[string]*bucket
	lastSweep time.Time
}

type bucket struct {
	lim      *rate.Limiter
	lastSeen time.Time
}

// NewLocal returns an in-process limiter. It keeps a shape of its own, no
// error: every field of cfg has a default and nothing is required, so
// there is nothing it could fail on.
func NewLocal(cfg LocalConfig) *Local {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	defaults.Positive(&cfg.IdleAfter, 10*time.Minute)
	l := &Local{cfg: cfg, seed: maphash.MakeSeed()}
	for i := range l.shards {
		l.shards[i].buckets = make(map[string]*bucket)
	}
	return l
}

// Allow takes one token from key's bucket if one is there. A change of l
// (an organization's new limit) applies to the existing bucket at once.
// An invalid l allows everything.
func (l *Local) Allow(_ context.Context, key string, lim Limit) (Decision, error) {
	if !lim.Valid() {
		return Decision{Allowed: true, Limit: lim}, nil
	}
	now := l.cfg.Now()
	s := &l.shards[maphash.String(l.seed, key)%shardCount]
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.lastSweep) >= l.cfg.IdleAfter {
		s.sweep(now, l.cfg.IdleAfter)
	}
	b, ok := s.buckets[key]
	if !ok {
		b = &bucket{lim: rate.NewLimiter(rate.Limit(lim.Rate), lim.Burst)}
		s.buckets[key] = b
	} else {
		if b.lim.Limit() != rate.Limit(lim.Rate) {
			b.lim.SetLimitAt(now, rate.Limit(lim.Rate))
		}
		if b.lim.Burst() != lim.Burst {
			b.lim.SetBurstAt(now, lim.Burst)
		}
	}
	b.lastSeen = now
	d := Decision{Limit: lim}
	r := b.lim.ReserveN(now, 1)
	if delay := r.DelayFrom(now); delay > 0 {
		r.CancelAt(now)
		d.RetryAfter = delay
	} else {
		d.Allowed = true
	}
	tokens := b.lim.TokensAt(now)
	d.Remaining = max(int(math.Floor(tokens)), 0)
	d.Reset = time.Duration((float64(lim.Burst) - tokens) / lim.Rate * float64(time.Second))
	return d, nil
}

// sweep forgets buckets unused for idle that are full again: a forgotten
// bucket comes back full, so forgetting it changes nothing.
func (s *shard) sweep(now time.Time, idle time.Duration) {
	for k, b := range s.buckets {
		if now.Sub(b.lastSeen) >= idle && b.lim.TokensAt(now) >= float64(b.lim.Burst()) {
			delete(s.buckets, k)
		}
	}
	s.lastSweep = now
}

// Len returns how many buckets are in memory.
func (l *Local) Len() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.buckets)
		s.mu.Unlock()
	}
	return n
}

// Shared is a Limiter over pace.Store: each key's bucket is a row in
// Postgres, so a key's rate holds in total across every API process on the
// database (docs/design.md, §Rates across processes). A bucket key is
// prefixed "key:" in the store.
type Shared struct {
	store *pace.Store
}

var _ Limiter = (*Shared)(nil)

// SharedConfig configures a Shared limiter.
type SharedConfig struct {
	// Store keeps the buckets. Required.
	Store *pace.Store
}

// NewShared validates cfg and returns a Limiter over its store.
func NewShared(cfg SharedConfig) (*Shared, error) {
	if cfg.Store == nil {
		return nil, errors.New("ratelimit: SharedConfig.Store is required")
	}
	return &Shared{store: cfg.Store}, nil
}

// Allow implements Limiter with one statement (pace.Store.Allow). An invalid
// l allows everything, as Local does.
func (s *Shared) Allow(ctx context.Context, key string, lim Limit) (Decision, error) {
	if !lim.Valid() {
		return Decision{Allowed: true, Limit: lim}, nil
	}
	p, err := s.store.Allow(ctx, "key:"+key, pace.Limit{Rate: lim.Rate, Burst: lim.Burst})
	if err != nil {
		return Decision{}, fmt.Errorf("ratelimit: %w", err)
	}
	return FromPace(lim, p), nil
}

// FromPace is the Decision of a shared bucket's decision p under lim.
func FromPace(lim Limit, p pace.Decision) Decision {
	return Decision{Allowed: p.Allowed, Limit: lim, Remaining: p.Remaining, Reset: p.Ahead, RetryAfter: p.RetryAfter}
}
