package queue

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/sqlq"
)

// queries are the package's named queries (platform/sqlq): the Rescuer's
// two statements.
//
//go:embed queries/*.sql
var queries embed.FS

// Rescuer gives the jobs of a dead worker process back to the living ones
// within seconds. River's own rescuer does this too, but only on the
// elected leader and every 30 seconds at best, past RescueStuckJobsAfter:
// a delivery whose worker was killed would wait up to a minute and a half
// for nothing. A job of a kind the Rescuer watches that has been running
// longer than its kind's rescue time (a bound past the kind's own timeout,
// after which a live worker has always finished it: River cancels its
// context at the timeout) is orphaned: the Rescuer makes it available at
// once, with an attempt error saying why, or discards it when it has no
// attempt left, exactly as River's rescuer would. Running it twice is safe:
// the deliveries are exactly once by their network reference, and the
// statement changes a job once however many processes run it.
//
// It also makes the watched kinds' scheduled and retryable jobs that are
// due available, as River's scheduler does on the leader every 5 s: when
// the dead process was the leader, no other process may lead for up to
// 15 s (River's leadership term), and a delivery snoozed for its sender's
// throttle would wait that long.
//
// Its two statements are the platform's only writes to River's tables
// (everything else goes through River's API). rescue_river_test.go holds
// them to River: the columns, types, states and migration they name, and
// a rescued job that River then works and completes, reading the rescue's
// error back; a River upgrade that changes any of it fails there.
type Rescuer struct {
	db       *db.DB
	q        *sqlq.Queries
	kinds    map[string]time.Duration
	interval time.Duration
	log      *slog.Logger
}

// RescuerConfig configures a Rescuer.
type RescuerConfig struct {
	// DB holds River's schema (migrate.RiverSchema); the Rescuer's
	// statements run through bun. Required.
	DB *db.DB
	// Kinds maps each job kind to watch to its rescue time: how long a job
	// of the kind may run before it is orphaned. Each must be longer than
	// the kind's timeout. Required.
	Kinds map[string]time.Duration
	// Interval is how often to look. Default 1 s.
	Interval time.Duration
	// Logger receives rescues (info) and failures (warn). Default
	// slog.Default().
	Logger *slog.Logger
}

// NewRescuer returns a Rescuer of the jobs in cfg.DB's River schema.
func NewRescuer(cfg RescuerConfig) (*Rescuer, error) {
	if cfg.DB == nil || cfg.DB.Bun == nil {
		return nil, errors.New("queue: NewRescuer needs a database")
	}
	if len(cfg.Kinds) == 0 {
		return nil, errors.New("queue: NewRescuer needs job kinds to watch")
	}
	for kind, after := range cfg.Kinds {
		if after <= 0 {
			return nil, fmt.Errorf("queue: rescue time of %s must be positive, got %s", kind, after)
		}
	}
	defaults.Positive(&cfg.Interval, time.Second)
	defaults.Logger(&cfg.Logger)
	q, err := sqlq.Load(queries, "queries")
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	return &Rescuer{db: cfg.DB, q: q, kinds: cfg.Kinds, interval: cfg.Interval, log: cfg.Logger}, nil
}

// RescueOnce frees every orphaned job of the watched kinds now, makes
// their due jobs available, and returns how many orphans it freed.
func (r *Rescuer) RescueOnce(ctx context.Context) (int, error) {
	total := 0
	var errs []error
	for kind, after := range r.kinds {
		if _, err := r.q.Raw(r.db.Bun, "due", sqlq.Args{"kind": kind}).Exec(ctx); err != nil {
			errs = append(errs, fmt.Errorf("schedule due %s jobs: %w", kind, err))
		}
		msg := ReasonInterrupted + reasonSep + fmt.Sprintf(
			"its worker stopped answering: rescued after running for more than %s", after)
		var ids []int64
		if err := r.q.Raw(r.db.Bun, "rescue", sqlq.Args{"kind": kind, "after_us": after.Microseconds(),
			"reason": msg}).Scan(ctx, &ids); err != nil {
			errs = append(errs, fmt.Errorf("rescue %s jobs: %w", kind, err))
			continue
		}
		if len(ids) > 0 {
			r.log.InfoContext(ctx, "orphaned jobs rescued", "kind", kind, "jobs", len(ids), "ids", ids)
		}
		total += len(ids)
	}
	return total, errors.Join(errs...)
}

// Run rescues every interval until ctx ends. A failed round is logged and
// the next one tries again.
func (r *Rescuer) Run(ctx context.Context) {
	clock.Every(ctx, r.interval, func(ctx context.Context) bool {
		if _, err := r.RescueOnce(ctx); err != nil && ctx.Err() == nil {
			r.log.WarnContext(ctx, "rescuing orphaned jobs failed", "error", err)
		}
		return true
	})
}
