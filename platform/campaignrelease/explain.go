package campaignrelease

import (
	"context"
	"time"

	"github.com/bizmsg/platform/platform/campaigns"
	"github.com/bizmsg/platform/platform/db"
)

// Explanation is why a campaign releases what it does now, for an
// operator (platform admin campaign explain): its state, its counts and
// each pool sender's room at this moment, with why it is zero.
type Explanation struct {
	Campaign campaigns.Campaign `json:"campaign"`
	// Senders is the pool as the next tick would see it.
	Senders []Sender `json:"senders"`
	// Room is the pool's total room: the most the next tick releases.
	Room int `json:"room"`
	// Waiting says what the campaign waits for, in words.
	Waiting string `json:"waiting"`
}

// Explain reads campaign id's state and its pool's room now (404 when the
// organization has no such campaign).
func (s *Service) Explain(ctx context.Context, t db.Tenant, id int64) (Explanation, error) {
	c, err := s.cfg.Campaigns.Get(ctx, t, id)
	if err != nil {
		return Explanation{}, err
	}
	now := s.cfg.Clock.Now()
	pool, err := s.pool(ctx, nil, t, c, now, 0, minWindow)
	if err != nil {
		return Explanation{}, err
	}
	x := Explanation{Campaign: c, Senders: pool}
	for _, p := range pool {
		x.Room += p.Room
	}
	x.Waiting = waiting(c, pool, x.Room, now)
	return x, nil
}

// waiting words what campaign c waits for.
func waiting(c campaigns.Campaign, pool []Sender, room int, now time.Time) string {
	switch c.Status {
	case campaigns.StatusDraft:
		return "a start: recipients are released only once the campaign is started"
	case campaigns.StatusScheduled:
		if c.SendAt != nil {
			return "its send_at, " + c.SendAt.UTC().Format(time.RFC3339)
		}
		return "its send_at"
	case campaigns.StatusPaused:
		return "a resume: nothing is released while paused"
	case campaigns.StatusCompleted, campaigns.StatusCanceled:
		return "nothing: the campaign is over"
	}
	switch {
	case c.Counts.Pending == 0:
		return "its last messages to leave queued; then it completes"
	case len(pool) == 0:
		return "a sender: none of the pool's sender numbers exists any more"
	case allOutForTheDay(pool):
		return "the next UTC day, " + nextMidnight(now).Format(time.RFC3339) +
			": every active sender of the pool is at the campaign's reserve of its daily limit"
	case room == 0:
		for _, p := range pool {
			if p.Why != WhyInactive {
				return "its queued messages to be delivered: each usable sender has rate·1 s of them in flight"
			}
		}
		return "an active sender: every sender of the pool is inactive"
	}
	return "nothing: the next tick (every 500 ms) releases up to the pool's room"
}
