// Package campaignrelease turns a running campaign's recipients into
// messages as the pacing allows (docs/design.md, §Campaigns: pacing and
// fairness; docs/api.md, §Campaigns).
//
// One River job per campaign (queue.CampaignArgs) runs it in ticks: each
// tick locks the campaign, and while it is running releases, for each
// sender of its pool, at most that sender's room: its throttle's rate for
// one second less the campaign's messages of that sender still queued,
// and no more than its allowance for the day past the campaign's reserve.
// Each recipient goes through the checks of a scheduled send
// (acceptance.Check outside the transaction, acceptance.ReleaseMany in it) and
// becomes one queued message, or is skipped with the check's code, in one
// transaction guarded by its pending status, so a recipient never gets two
// messages however often a tick runs. Then the job snoozes until the next
// tick; a paused, canceled or completed campaign ends it.
package campaignrelease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/acceptance"
	"github.com/bizmsg/platform/platform/campaigns"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/sqlq"
)

// Config configures a Service.
type Config struct {
	// DB is the database. Required.
	DB *db.DB
	// Acceptance runs each recipient's checks and release. Required.
	Acceptance *acceptance.Service
	// Campaigns locks, runs and completes campaigns. Required.
	Campaigns *campaigns.Service
	// Jobs inserts the campaigns' release jobs (the job outbox). Required.
	Jobs queue.Inserter
	// SenderRate is the throttle rate (messages/s) of organizations
	// without their own (central.organizations.sender_rate): SENDER_RATE.
	// Default 20.
	SenderRate float64
	// Tick is the time between the starts of two ticks of a campaign
	// that has recipients to release. Default 500 ms.
	Tick time.Duration
	// Idle is the time between ticks of a campaign with nothing pending
	// that waits for its last messages to leave queued. Default 2 s.
	Idle time.Duration
	// Checks is how many recipients' checks (network lookups) a tick runs
	// at once (their lookups batch together in the network adapter). Default 64.
	Checks int
	// Clock is the time source. Default clock.Real{}.
	Clock clock.Clock
	// Logger. Default slog.Default().
	Logger *slog.Logger
}

// Service releases campaigns. It is safe for concurrent use.
type Service struct {
	cfg      Config
	log      *slog.Logger
	counters *messages.Counters
	q        *sqlq.Queries
}

// New validates cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.DB == nil || cfg.DB.Pool == nil:
		return nil, errors.New("campaignrelease: Config.DB is required")
	case cfg.Acceptance == nil:
		return nil, errors.New("campaignrelease: Config.Acceptance is required")
	case cfg.Campaigns == nil:
		return nil, errors.New("campaignrelease: Config.Campaigns is required")
	case cfg.Jobs == nil:
		return nil, errors.New("campaignrelease: Config.Jobs is required")
	}
	defaults.Positive(&cfg.SenderRate, 20)
	defaults.Positive(&cfg.Tick, 500*time.Millisecond)
	defaults.Positive(&cfg.Idle, 2*time.Second)
	defaults.Positive(&cfg.Checks, 64)
	defaults.Clock(&cfg.Clock)
	defaults.Logger(&cfg.Logger)
	counters, err := messages.NewCounters()
	if err != nil {
		return nil, fmt.Errorf("campaignrelease: %w", err)
	}
	q, err := sqlq.Load(queries, "queries")
	if err != nil {
		return nil, fmt.Errorf("campaignrelease: %w", err)
	}
	return &Service{cfg: cfg, log: cfg.Logger.With("component", "campaignrelease"), counters: counters, q: q}, nil
}

// Wake queues campaign id's release job in tx, the transaction of a
// change of its state (campaigns.Releaser): running → due now; scheduled →
// due at its send_at; any other state → nothing (the job, if one waits,
// ends at its next tick). The job carries the campaign's release
// generation, raised here: a job of the run before, still unfinished
// while this one commits (its tick may be under way), ends at its next
// tick instead of holding this one back.
func (s *Service) Wake(ctx context.Context, tx pgx.Tx, t db.Tenant, id int64) error {
	c, err := s.cfg.Campaigns.Lock(ctx, tx, t, id)
	if err != nil {
		return err
	}
	var at time.Time
	switch c.Status {
	case campaigns.StatusRunning:
		at = s.cfg.Clock.Now()
	case campaigns.StatusScheduled:
		if c.SendAt != nil {
			at = *c.SendAt
		}
	default:
		return nil
	}
	gen, err := s.cfg.Campaigns.NextReleaseGen(ctx, tx, t, id)
	if err != nil {
		return err
	}
	args := queue.CampaignArgs{TenantRef: queue.RefOf(t), CampaignID: id, Gen: gen}
	if _, err := s.cfg.Jobs.InsertTx(ctx, tx, args, queue.CampaignJob(args, at)); err != nil {
		return err
	}
	return nil
}

// Outcome is what a tick decided about its job.
type Outcome struct {
	// Done: the campaign is no longer running (paused, canceled,
	// completed), or a newer job carries its release: the job ends.
	Done bool
	// Next is when the job is to tick again (Done false).
	Next time.Duration
	// Released and Skipped count this tick's recipients.
	Released, Skipped int
}
