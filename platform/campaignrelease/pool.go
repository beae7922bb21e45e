package campaignrelease

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/campaigns"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/sqlq"
)

// Why a pool sender has no room at a tick (Sender.Why).
const (
	// WhyInactive: the sender number is not active; it is left out of the
	// pool for the tick (its sticky recipients go to the others).
	WhyInactive = "inactive"
	// WhyReserve: its allowance for the day, less the campaign's reserve,
	// is used; it is left out until the next UTC day.
	WhyReserve = "reserve"
	// WhyInFlight: the campaign's messages of it still queued fill its
	// throttle's window (rate × the tick's window, 1 s at least).
	WhyInFlight = "in_flight"
)

// Sender is one pool sender's state at a tick and the room it gives.
type Sender struct {
	ID     int64  `json:"sender_number_id"`
	Status string `json:"status"`
	// Rate is its throttle's rate (messages/s).
	Rate float64 `json:"rate"`
	// Limit is its daily limit, Reserve the part of it the campaign leaves
	// (ceil(limit·reserve_percent/100)), Used the day's acceptances.
	Limit   int `json:"daily_limit"`
	Reserve int `json:"reserve"`
	Used    int `json:"used_today"`
	// InFlight is the campaign's messages of this sender still queued.
	InFlight int `json:"in_flight"`
	// oldest is the lowest id of those (0: none).
	oldest int64
	// Allowance is Limit − Reserve − Used (≤ 0: out for the day).
	Allowance int `json:"allowance"`
	// Room is how many recipients the tick may release on it:
	// min(rate × window − InFlight, Allowance), not below 0, the window
	// being 1 s unless the ticks come further apart (window); Why says
	// why it is 0.
	Room int    `json:"room"`
	Why  string `json:"why,omitempty"`
}

// usable reports whether the sender may take recipients today (active,
// with allowance left).
func (s *Sender) usable() bool { return s.Why != WhyInactive && s.Allowance > 0 }

// pool reads campaign c's senders at now (in tx, or on the pool when tx
// is nil), counting its queued messages from id low on, and computes each
// one's room for window.
func (s *Service) pool(ctx context.Context, tx pgx.Tx, t db.Tenant, c campaigns.Campaign, now time.Time, low int64, window time.Duration) ([]Sender, error) {
	var q db.Querier = s.cfg.DB.Pool
	if tx != nil {
		q = tx
	}
	org, err := s.counters.ReadLimits(ctx, q, t.OrgID)
	if err != nil {
		return nil, fmt.Errorf("read the pool of campaign %d: %w", c.ID, err)
	}
	rate := s.cfg.SenderRate
	if org.SenderRate != nil && *org.SenderRate > 0 {
		rate = *org.SenderRate
	}
	// The named query pool, planned for these very marks (pgx's unnamed
	// statement): a generic plan knows neither how far on low is nor how
	// few messages are queued.
	text, args, err := s.q.Pgx("pool", t.Quoted(), sqlq.Args{
		"pool": c.SenderNumberIDs, "default_limit": org.DefaultDailyLimit, "now": now, "id": c.ID, "low": low,
	})
	if err != nil {
		return nil, fmt.Errorf("read the pool of campaign %d: %w", c.ID, err)
	}
	rows, err := q.Query(ctx, text, append([]any{pgx.QueryExecModeExec}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("read the pool of campaign %d: %w", c.ID, err)
	}
	var (
		out []Sender
		x   Sender
	)
	_, err = pgx.ForEachRow(rows, []any{&x.ID, &x.Status, &x.Limit, &x.Used, &x.InFlight, &x.oldest}, func() error {
		x.Rate = rate
		out = append(out, room(x, c.ReservePercent, window))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the pool of campaign %d: %w", c.ID, err)
	}
	return out, nil
}

// room fills x's reserve, allowance and room for a campaign keeping
// reserve percent of each sender's daily limit, with window's worth of
// its throttle in flight.
func room(x Sender, reserve int, window time.Duration) Sender {
	x.Reserve = int(math.Ceil(float64(x.Limit) * float64(reserve) / 100))
	x.Allowance = x.Limit - x.Reserve - x.Used
	perWindow := max(1, int(math.Floor(x.Rate*window.Seconds())))
	x.Room, x.Why = 0, ""
	switch {
	case x.Status != string(senders.StatusActive):
		x.Why = WhyInactive
	case x.Allowance <= 0:
		x.Why = WhyReserve
	case perWindow-x.InFlight <= 0:
		x.Why = WhyInFlight
	default:
		x.Room = min(perWindow-x.InFlight, x.Allowance)
	}
	return x
}

// assign gives each of phones (in order) a sender of pool: its sticky
// sender (sticky[phone]) while that one is usable today, waiting for the
// next tick when it has no room left in this one; otherwise the usable
// sender with the most room left. -1: none this tick (the recipient stays
// pending). pool's rooms are used up in place.
func assign(phones []string, sticky map[string]int64, pool []Sender) []int64 {
	at := make(map[int64]*Sender, len(pool))
	for i := range pool {
		at[pool[i].ID] = &pool[i]
	}
	out := make([]int64, len(phones))
	for i, p := range phones {
		out[i] = -1
		if sid, ok := sticky[p]; ok {
			if x := at[sid]; x != nil && x.usable() {
				if x.Room > 0 {
					x.Room--
					out[i] = sid
				}
				continue
			}
		}
		var best *Sender
		for j := range pool {
			if x := &pool[j]; x.Room > 0 && (best == nil || x.Room > best.Room) {
				best = x
			}
		}
		if best != nil {
			best.Room--
			out[i] = best.ID
		}
	}
	return out
}

// nextMidnight is the start of the UTC day after t.
func nextMidnight(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}
