package messages

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Delivery order (docs/api.md, §Delivery order): the messages of a
// conversation, one sender number to one recipient, reach the network in id
// order. The claim (claimOneSQL, claimManySQL, claimLocked) finds, for each
// message, the nearest earlier message of its conversation that is still
// queued (blockerSQL); a message with one waits. deliverBatch delivers the
// messages of one conversation in its batch one per round, and a message
// follows only one that left queued.
//
// A delivery that waits for a message whose job runs in this process (being
// delivered, or waiting itself) waits in its run until that run ends
// (flights), within the run's inline wait (Config.MaxInlineWait), and
// claims again. Otherwise it snoozes its job for Config.OrderWait, keeping
// the throttle token it took for its next run in this process
// (heldTokens).

// conversation is the pair whose messages are delivered in order: a sender
// number and a recipient's phone.
type conversation struct {
	sender int64
	to     string
}

// orderWaitError is the outcome of a delivery that must wait for an earlier
// message of its conversation, blocker, to leave queued.
type orderWaitError struct {
	blocker int64
}

func (w *orderWaitError) Error() string {
	return fmt.Sprintf("waits for message %d, earlier in its conversation and still queued", w.blocker)
}

// heldTokenTTL is how long a held token waits for its job to run again in
// this process (heldTokens), the throttle's own ticket lifetime.
const heldTokenTTL = time.Minute

// heldTokens is the throttle tokens of deliveries that took theirs and then
// waited for an earlier message of their conversation, by job ticket: the
// job's next run in this process delivers on it instead of taking another,
// so that waiting for order costs a sender no tokens (a token burnt at each
// wait would push the waiting message behind every token reserved since,
// and the messages after it behind it in turn). At most a sender's burst of
// tokens are held per sender, and a token is forgotten heldTokenTTL after
// its wait began (its job ran again elsewhere).
type heldTokens struct {
	mu        sync.Mutex
	byTicket  map[string]heldToken
	perKey    map[string]int
	lastSweep time.Time
}

type heldToken struct {
	key string // the throttle bucket
	at  time.Time
}

// keep holds the token job ticket took from bucket key (of burst tokens),
// unless the bucket's holders have burst tokens already.
func (h *heldTokens) keep(ticket, key string, burst int, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byTicket == nil {
		h.byTicket, h.perKey, h.lastSweep = make(map[string]heldToken), make(map[string]int), now
	}
	if now.Sub(h.lastSweep) >= heldTokenTTL {
		h.lastSweep = now
		for t, tok := range h.byTicket {
			if now.Sub(tok.at) >= heldTokenTTL {
				h.dropLocked(t, tok)
			}
		}
	}
	if _, held := h.byTicket[ticket]; held || h.perKey[key] >= burst {
		return
	}
	h.byTicket[ticket] = heldToken{key: key, at: now}
	h.perKey[key]++
}

// take reports whether job ticket holds a token, and gives it up.
func (h *heldTokens) take(ticket string, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	tok, held := h.byTicket[ticket]
	if !held {
		return false
	}
	h.dropLocked(ticket, tok)
	return now.Sub(tok.at) < heldTokenTTL
}

func (h *heldTokens) dropLocked(ticket string, tok heldToken) {
	delete(h.byTicket, ticket)
	if h.perKey[tok.key]--; h.perKey[tok.key] <= 0 {
		delete(h.perKey, tok.key)
	}
}

// flightKey names a message whose delivery job runs in this process.
type flightKey struct {
	schema string
	id     int64
}

// flights is the messages whose delivery jobs run in this process
// (DeliverMessage, from its start to its return), so that a delivery that
// must wait for one of them waits for its run to end instead of snoozing:
// a conversation whose jobs run in one process goes one message after the
// other without a snooze between them. It only saves time: the claim that
// follows the wait decides, as always, whether the message may go.
type flights struct {
	mu   sync.Mutex
	runs map[flightKey]*flight
	// parked counts the deliveries waiting in park now.
	parked atomic.Int64
}

// flight is the runs of one message's jobs in this process (two when a
// rescued job runs beside the original); done is closed when the last
// ends.
type flight struct {
	n    int
	done chan struct{}
}

// start records that a job of message k runs; end, called once when the
// run returns, wakes the deliveries waiting for k once no job of k runs.
func (f *flights) start(k flightKey) (end func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.runs == nil {
		f.runs = make(map[flightKey]*flight)
	}
	fl := f.runs[k]
	if fl == nil {
		fl = &flight{done: make(chan struct{})}
		f.runs[k] = fl
	}
	fl.n++
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if fl.n--; fl.n == 0 {
			close(fl.done)
			delete(f.runs, k)
		}
	}
}

// park waits for the runs of message k in this process to end, until
// deadline, and reports whether they ended (the caller claims again);
// false at once when no job of k runs here, or when the deadline or ctx
// came first.
func (f *flights) park(ctx context.Context, k flightKey, deadline time.Time) bool {
	f.mu.Lock()
	fl := f.runs[k]
	f.mu.Unlock()
	wait := time.Until(deadline)
	if fl == nil || wait <= 0 {
		return false
	}
	f.parked.Add(1)
	defer f.parked.Add(-1)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-fl.done:
		return true
	case <-timer.C:
		return false
	case <-ctx.Done():
		return false
	}
}
