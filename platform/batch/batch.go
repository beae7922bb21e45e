// Package batch turns concurrent calls that share a key into one call over
// all their items, the way a database groups commits: a call that arrives
// while its key's calls are all busy waits, and the next run takes every
// item waiting. Under light load a call runs alone at once (no timer, no
// added latency); under heavy load the runs grow to amortise their fixed
// cost (round trips, commits, locks) over many items.
//
// The platform's message delivery uses it per tenant: River runs each
// delivery as its own job, and the jobs of one tenant that run at the same
// time claim, deliver and record their messages in a few statements between
// them instead of a few each.
package batch

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bizmsg/platform/platform/defaults"
)

// Func works the items of one key and returns one result per item, in
// order. An error fails every item of the run.
type Func[K comparable, In, Out any] func(ctx context.Context, key K, items []In) ([]Out, error)

// Observer observes a value (prometheus.Observer is one).
type Observer interface {
	Observe(float64)
}

// ObserverFunc is a function as an Observer.
type ObserverFunc func(float64)

// Observe calls f(v).
func (f ObserverFunc) Observe(v float64) { f(v) }

// Config bounds the runs.
type Config struct {
	// MaxSize is the most items in one run. Default 64.
	MaxSize int
	// MaxInFlight is the most runs of one key at once. Default 2: one run
	// waits on the database while the other works, and the items that
	// arrive meanwhile gather for the next.
	MaxInFlight int
	// Timeout bounds a run. A run serves several callers, so its context
	// is not any one caller's: it keeps the values of the context of the
	// call that started it, not its deadline or cancellation. Default 30 s.
	Timeout time.Duration
	// Sizes, when set, observes the number of items of each run as it
	// starts (the service's batch_size histogram, a prometheus.Observer:
	// how much the batching saves).
	Sizes Observer
	// Load, when set, counts the runs in flight: Enter as a run starts,
	// Leave as it ends. The platform's foreground batchers (the API's and
	// the send path's) count theirs on the yield gate, which background
	// work gives way to (yield.Gate).
	Load Load
	// OnQueue, when set, is told the number of items of a key that wait
	// for a run each time items join them: the one way a test learns that
	// its calls have gathered behind a busy key, instead of a sleep. Calls
	// that join at once may tell their counts out of order; the largest
	// told is how many waited together.
	OnQueue func(waiting int)
}

// Load counts runs in flight (yield.Gate).
type Load interface {
	Enter()
	Leave()
}

// ReadMaxInFlight is the MaxInFlight of runs of read-only statements that a
// whole process shares (API keys, network lookups), for their packages'
// defaults: such reads contend on no row, and more than the default 2 keeps
// one run that stalls on a busy machine from holding up every call behind
// it (docs/performance.md, §Shared reads).
const ReadMaxInFlight = 4

func (c *Config) setDefaults() {
	defaults.Positive(&c.MaxSize, 64)
	defaults.Positive(&c.MaxInFlight, 2)
	defaults.Positive(&c.Timeout, 30*time.Second)
}

// Batcher groups calls by key. It is safe for concurrent use; the zero value
// is not usable (use New).
type Batcher[K comparable, In, Out any] struct {
	run Func[K, In, Out]
	cfg Config

	mu      sync.Mutex
	keys    map[K]*queue[In, Out]
	workers workers
}

type queue[In, Out any] struct {
	pending []*call[In, Out]
	running int
}

type call[In, Out any] struct {
	ctx  context.Context
	in   In
	out  Out
	err  error
	done chan struct{}
}

// New returns a Batcher that works items with run. It keeps a shape of its
// own rather than New(Config) (*T, error): run is what the Batcher does, not
// a dependency to check, and Config (embedded in its users' configs) has a
// default for every field, so there is nothing it could fail on.
func New[K comparable, In, Out any](run Func[K, In, Out], cfg Config) *Batcher[K, In, Out] {
	cfg.setDefaults()
	return &Batcher[K, In, Out]{run: run, cfg: cfg, keys: make(map[K]*queue[In, Out]),
		workers: workers{idle: make(chan func()), wait: workerIdle}}
}

// Do works in under key, in a run with the other items of key that are
// waiting, and returns its result. It returns ctx's error if ctx ends first;
// an item whose caller has gone is dropped if its run has not started, and
// its result discarded if it has (the work must be safe to repeat).
func (b *Batcher[K, In, Out]) Do(ctx context.Context, key K, in In) (Out, error) {
	c := &call[In, Out]{ctx: ctx, in: in, done: make(chan struct{})}
	b.mu.Lock()
	q := b.keys[key]
	if q == nil {
		q = &queue[In, Out]{}
		b.keys[key] = q
	}
	q.pending = append(q.pending, c)
	b.startLocked(key, q)
	waiting := len(q.pending)
	b.mu.Unlock()
	b.queued(waiting)

	select {
	case <-c.done:
		return c.out, c.err
	case <-ctx.Done():
		var zero Out
		return zero, ctx.Err()
	}
}

// DoAll is Do for several items at once: they are queued together, in
// order, so that they share a run (up to MaxSize; the rest go in the next
// runs, in order), and it returns each item's result and error once every
// item's run has finished. An item whose run has not finished when ctx
// ends gets ctx's error.
func (b *Batcher[K, In, Out]) DoAll(ctx context.Context, key K, ins []In) ([]Out, []error) {
	calls := make([]*call[In, Out], len(ins))
	for i, in := range ins {
		calls[i] = &call[In, Out]{ctx: ctx, in: in, done: make(chan struct{})}
	}
	b.mu.Lock()
	q := b.keys[key]
	if q == nil {
		q = &queue[In, Out]{}
		b.keys[key] = q
	}
	q.pending = append(q.pending, calls...)
	b.startLocked(key, q)
	waiting := len(q.pending)
	b.mu.Unlock()
	b.queued(waiting)

	outs, errs := make([]Out, len(ins)), make([]error, len(ins))
	for i, c := range calls {
		select {
		case <-c.done:
			outs[i], errs[i] = c.out, c.err
		case <-ctx.Done():
			errs[i] = ctx.Err()
		}
	}
	return outs, errs
}

// queued tells Config.OnQueue that waiting items wait for a run.
func (b *Batcher[K, In, Out]) queued(waiting int) {
	if b.cfg.OnQueue != nil {
		b.cfg.OnQueue(waiting)
	}
}

// startLocked starts runs of key's waiting items while key has room for
// them. b.mu is held.
func (b *Batcher[K, In, Out]) startLocked(key K, q *queue[In, Out]) {
	for q.running < b.cfg.MaxInFlight && len(q.pending) > 0 {
		calls := make([]*call[In, Out], 0, min(len(q.pending), b.cfg.MaxSize))
		n := 0
		for ; n < len(q.pending) && len(calls) < b.cfg.MaxSize; n++ {
			if c := q.pending[n]; c.ctx.Err() == nil {
				calls = append(calls, c)
			}
		}
		q.pending = append(q.pending[:0], q.pending[n:]...)
		if len(calls) == 0 {
			continue
		}
		q.running++
		b.workers.start(func() { b.work(key, q, calls) })
	}
	if q.running == 0 && len(q.pending) == 0 {
		delete(b.keys, key)
	}
}

// work runs calls and hands each its result, then starts the next run of
// key if items are waiting.
func (b *Batcher[K, In, Out]) work(key K, q *queue[In, Out], calls []*call[In, Out]) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(calls[0].ctx), b.cfg.Timeout)
	outs, err := b.safeRun(ctx, key, calls)
	cancel()
	for i, c := range calls {
		if err != nil {
			c.err = err
		} else {
			c.out = outs[i]
		}
		close(c.done)
	}
	b.mu.Lock()
	q.running--
	b.startLocked(key, q)
	b.mu.Unlock()
}

// safeRun calls run, turning a panic or a wrong number of results into the
// run's error, so that one bad run fails its items instead of the process.
func (b *Batcher[K, In, Out]) safeRun(ctx context.Context, key K, calls []*call[In, Out]) (outs []Out, err error) {
	defer func() {
		if p := recover(); p != nil {
			outs, err = nil, fmt.Errorf("batch: run panicked: %v", p)
		}
	}()
	items := make([]In, len(calls))
	for i, c := range calls {
		items[i] = c.in
	}
	if b.cfg.Sizes != nil {
		b.cfg.Sizes.Observe(float64(len(items)))
	}
	if b.cfg.Load != nil {
		b.cfg.Load.Enter()
		defer b.cfg.Load.Leave()
	}
	outs, err = b.run(ctx, key, items)
	switch {
	case err != nil:
		return nil, err
	case len(outs) != len(items):
		return nil, fmt.Errorf("batch: run returned %d results for %d items", len(outs), len(items))
	}
	return outs, nil
}

// workerIdle is how long a run's goroutine waits for the next run before it
// exits.
const workerIdle = 5 * time.Second

// workers runs each run on a goroutine that ran an earlier one when one is
// idle. A run goes deep into the database driver (pgx reads), and a new
// goroutine per run grew its stack there every time: runtime.newstack was
// 5-12% of the service's CPU in closed-loop send profiles
// (docs/performance.md, §Batching). A worker's grown stack serves the runs
// after it until a garbage collection shrinks it.
type workers struct {
	// idle hands a run to a worker waiting for one; unbuffered, so a send
	// succeeds only while a worker waits.
	idle chan func()
	// wait is how long an idle worker waits before it exits.
	wait time.Duration
	// live counts the workers (for tests).
	live atomic.Int64
}

// start runs f on an idle worker, or on a new one. It never blocks.
func (w *workers) start(f func()) {
	select {
	case w.idle <- f:
	default:
		w.live.Add(1)
		go w.loop(f)
	}
}

// loop runs f, then each run handed to it, until none comes for w.wait.
// A finished run is not kept while the worker waits.
func (w *workers) loop(f func()) {
	defer w.live.Add(-1)
	f()
	timer := time.NewTimer(w.wait)
	defer timer.Stop()
	for {
		select {
		case next := <-w.idle:
			next()
			timer.Reset(w.wait)
		case <-timer.C:
			return
		}
	}
}
