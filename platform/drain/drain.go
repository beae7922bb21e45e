// Package drain runs, in one process, at most one drain of each key at a
// time: the webhook outbox's expansion and the job outbox's move, each per
// tenant, woken after the commits that fill them. A wake while the key's
// drain runs has it run once more when it ends, so a row committed during
// a drain is never left behind; a wake while none runs starts one, in a
// goroutine of its own. Wake never blocks: it runs in the goroutine that
// committed.
package drain

import (
	"context"
	"errors"
	"sync"
)

// Config configures a Runner.
type Config[K comparable] struct {
	// Run drains key once: it returns when what it found is done. The
	// context ends at Close. Required.
	Run func(ctx context.Context, key K) error
	// OnError, when set, is told of a Run's error (not of one Close
	// caused). A failed Run ends the key's drain like one that succeeded:
	// it runs once more only when it was woken during the run, so a wake
	// is never lost and a failure is not retried in a loop.
	OnError func(key K, err error)
}

// Runner runs the drains of one process. It is safe for concurrent use.
type Runner[K comparable] struct {
	cfg    Config[K]
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex
	// running holds the keys being drained; true when one was woken again
	// during its drain (it runs once more before ending).
	running map[K]bool
}

// New checks cfg and returns a Runner; Close stops it.
func New[K comparable](cfg Config[K]) (*Runner[K], error) {
	if cfg.Run == nil {
		return nil, errors.New("drain: Config.Run is required")
	}
	ctx, cancel := context.WithCancel(context.Background()) //nolint:gosec // G118: Close calls the Runner's cancel
	return &Runner[K]{cfg: cfg, ctx: ctx, cancel: cancel, running: map[K]bool{}}, nil
}

// Wake makes sure key is drained: it starts key's drain, or, when one is
// running, has it run once more before it ends. After Close it does
// nothing.
func (r *Runner[K]) Wake(key K) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx.Err() != nil {
		return
	}
	if _, ok := r.running[key]; ok {
		r.running[key] = true
		return
	}
	r.running[key] = false
	r.wg.Add(1)
	go r.drain(key)
}

// drain runs key's Run until it was not woken during the last one, or
// until Close.
func (r *Runner[K]) drain(key K) {
	defer r.wg.Done()
	for {
		if err := r.cfg.Run(r.ctx, key); err != nil && r.ctx.Err() == nil && r.cfg.OnError != nil {
			r.cfg.OnError(key, err)
		}
		if r.done(key, r.ctx.Err() != nil) {
			return
		}
	}
}

// done ends key's drain unless it was woken again (and force is false);
// it reports whether it ended.
func (r *Runner[K]) done(key K, force bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running[key] && !force {
		r.running[key] = false
		return false
	}
	delete(r.running, key)
	return true
}

// Close cancels the drains' context and waits for them to end.
func (r *Runner[K]) Close() {
	r.mu.Lock()
	r.cancel()
	r.mu.Unlock()
	r.wg.Wait()
}
