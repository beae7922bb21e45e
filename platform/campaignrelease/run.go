package campaignrelease

import (
	"context"
	"time"

	"github.com/bizmsg/platform/platform/db"
)

// The window of a tick: how much of each sender's throttle the campaign
// may have in flight (queued) once the tick has released. It must last
// until the next tick's messages reach the throttle, one period of ticks
// plus their way there (the tick's commit, the job outbox's move, River's
// fetch), or the throttle idles in between: with 1 s and ticks 1.2 s
// apart on a busy machine, the bench released at 37% of the throttle.
const (
	// minWindow is the window of ticks at most Tick apart: rate·1 s, so a
	// delivery job waits under a second inline for its token.
	minWindow = time.Second
	// lead is the way from a tick's commit to the throttle.
	lead = 500 * time.Millisecond
	// maxWindow bounds the window however far apart ticks come.
	maxWindow = 2 * time.Second
)

// marks are what a run's ticks learnt about campaign's rows, to start the
// next tick's reads past the rows a vacuum has not yet removed (the
// release changes a recipient's status and a message's, and each change
// leaves an index entry behind until then). The zero marks read
// everything: each run starts with them, so nothing depends on a mark
// outliving the run that set it.
type marks struct {
	// from: every recipient of the campaign still pending has id ≥ from.
	from int64
	// low: every message of the campaign still queued has id ≥ low.
	low int64
	// last is when the run's previous tick began (zero: none yet).
	last time.Time
	// noneQueued: the tick's pool read found no message queued.
	noneQueued bool
}

// window returns the window of a tick beginning at began, the run's ticks
// being due every tick: one period since the previous tick began (tick for
// the run's first) plus the lead, within [minWindow, maxWindow]. The tick
// is recorded as the previous one.
func (m *marks) window(began time.Time, tick time.Duration) time.Duration {
	period := tick
	if !m.last.IsZero() {
		period = began.Sub(m.last)
	}
	m.last = began
	return min(max(period+lead, minWindow), maxWindow)
}

// sawPool moves low on to the oldest queued message the pool read found
// (the ids of messages released later are higher); with none queued, low
// waits for the tick's own messages (moveOn).
func (m *marks) sawPool(pool []Sender) {
	oldest := int64(0)
	for _, x := range pool {
		if x.oldest > 0 && (oldest == 0 || x.oldest < oldest) {
			oldest = x.oldest
		}
	}
	m.noneQueued = oldest == 0
	if oldest > 0 {
		m.low = oldest
	}
}

// moveOn moves from on past the recipients of list (the tick's, in id
// order) that ended, up to the first that is still pending, and, when the
// pool read found no message queued, low on to the lowest id the tick
// drew for its messages.
func (m *marks) moveOn(list []recipient) {
	if len(list) == 0 {
		return
	}
	next := list[len(list)-1].id + 1
	drawn := int64(0)
	for _, r := range list {
		if !r.ended {
			next = min(next, r.id)
		}
		if r.messageID > 0 && (drawn == 0 || r.messageID < drawn) {
			drawn = r.messageID
		}
	}
	m.from = max(m.from, next)
	if m.noneQueued && drawn > 0 {
		m.low = max(m.low, drawn)
	}
}

// Run runs campaign id's release as one run of its job of release
// generation gen: ticks, the next one waited for in the worker while it
// is due within Tick and the run's ticks end within budget (the job's timeout less a margin); then it
// returns the last tick's outcome, for the job to snooze until the next
// (Next) or end (Done). A run keeps its marks from tick to tick; a wait in
// the worker spares each tick River's round trip of a snooze (its
// complete, the scheduler or the rescuer making it available, its fetch:
// 0.25 s median, 0.41 s p90 in the bench on a busy machine). It ends early
// with ctx.
func (s *Service) Run(ctx context.Context, t db.Tenant, id, gen int64, budget time.Duration) (Outcome, error) {
	began := time.Now()
	var (
		m     marks
		total Outcome
		worst time.Duration
	)
	for {
		start := time.Now()
		out, err := s.tick(ctx, t, id, gen, &m)
		if err != nil {
			return out, err
		}
		worst = max(worst, time.Since(start))
		total.Released += out.Released
		total.Skipped += out.Skipped
		total.Done, total.Next = out.Done, out.Next
		if out.Done || out.Next > s.cfg.Tick || time.Since(began)+out.Next+worst > budget {
			return total, nil
		}
		timer := time.NewTimer(out.Next)
		select {
		case <-ctx.Done():
			timer.Stop()
			return total, nil
		case <-timer.C:
		}
	}
}
