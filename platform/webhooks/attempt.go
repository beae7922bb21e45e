package webhooks

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/sqlq"
)

// Waits of a delivery that cannot be attempted at once. A short wait is
// waited out in the worker, which holds a worker slot but no database
// connection, and costs nothing in the database; a longer one, or one
// that outlasts its bound, becomes a snooze of the job (a River update and
// a later fetch). Snoozing at once cost a second of delay and two writes
// per wait, and almost every message.delivered of the built-in network
// waited so for its message.sent, in flight at the same time
// (docs/design.md, §Webhooks).
const (
	// capWait is how long a delivery waits in the worker for one of its
	// endpoint's Config.MaxInFlight places in this process; past it, its
	// job snoozes about as long (±50%).
	capWait = time.Second
	// turnWait is how long a delivery waits in the worker for the earlier
	// delivery of its key that is being attempted now (it is due) to be
	// recorded, before it snoozes.
	turnWait = 2 * time.Second
	// orderSlack is added to the next attempt of the earlier delivery a
	// delivery snoozes for, with up to as much again of jitter.
	orderSlack = 250 * time.Millisecond
	// yieldWait is how long a delivery waits in the worker while the API
	// and the send path are busy (Config.Yield), before its job snoozes about
	// capWait (±50%).
	yieldWait = 10 * time.Second
	// staleAfter: a delivery still pending this long after its retry
	// window ended has lost its job (an operator cancelled it) and no
	// longer holds back the later events of its key.
	staleAfter = 6 * time.Hour
)

// errEndpointDisabled is the last_error of a delivery failed because its
// endpoint was disabled before its attempt.
const errEndpointDisabled = "endpoint disabled"

// Result is what an Attempt asks of the job that ran it.
type Result struct {
	// Snooze, when positive, means nothing was attempted: an earlier
	// delivery of the same key to the endpoint is pending, the send path
	// was busy (Config.Yield) for as long as the attempt waited, or
	// the endpoint has Config.MaxInFlight attempts in flight in this
	// process. The job runs again after it, without counting an attempt.
	Snooze time.Duration
	// Failure says why the attempt failed, when the delivery will be
	// attempted again ("" when it succeeded, failed for good, or there was
	// nothing to do).
	Failure string
}

// Attempt makes one attempt of delivery deliveryID to endpoint endpointID
// (the River worker calls it in run, its job's run). It does
// nothing for a delivery that is no longer pending (or no longer exists),
// and fails one whose endpoint is disabled (last_error "endpoint
// disabled"). It waits (Result.Snooze) while an earlier delivery of the same
// key to the endpoint is pending, so the events of a key arrive in order,
// while the send path is busy (Config.Yield), and while the
// endpoint has Config.MaxInFlight attempts in flight in this process.
// Otherwise it signs the event's body with the endpoint's secrets,
// POSTs it through the guarded client and records the attempt: a 2xx
// answer within Config.Timeout succeeds the delivery and ends the
// endpoint's failure streak; anything else is retried with backoff
// (RetryIn, recorded as the delivery's next attempt), until the first
// failure Config.RetryFor after the delivery's creation (or on the job's
// last run), which fails it. An endpoint
// whose attempts have all failed for Config.DisableAfter is disabled.
//
// An error is a failure of the platform (the database), not of the
// endpoint: the job is retried after RetryIn as well.
func (s *Service) Attempt(ctx context.Context, t db.Tenant, endpointID, deliveryID int64, run queue.DeliveryAttempt) (Result, error) {
	if !s.cfg.Yield.Acquire(ctx, yieldWait) {
		return Result{Snooze: jitter(capWait, 0.5)}, nil
	}
	d, snooze, err := s.ready(ctx, t, deliveryID)
	if err != nil || snooze > 0 || d == nil {
		return Result{Snooze: snooze}, gone(err, deliveryID, run)
	}
	release, waited, ok := s.takePlace(ctx, t.Schema, endpointID, capWait)
	if !ok {
		return Result{Snooze: jitter(capWait, 0.5)}, nil
	}
	defer release()
	if waited {
		// The delivery may have changed while it waited for its place (a
		// rotated secret, a disabled endpoint): read it again.
		if d, snooze, err = s.ready(ctx, t, deliveryID); err != nil || snooze > 0 || d == nil {
			return Result{Snooze: snooze}, gone(err, deliveryID, run)
		}
	}
	defer s.turnRecorded(turnKey{t.Schema, d.endpointID, d.key})
	res := s.post(ctx, *d, s.clock.Now())
	if ctx.Err() != nil {
		// Cancelled by the worker (a shutdown or the job's timeout): not
		// the endpoint's failure.
		return Result{}, fmt.Errorf("webhook delivery %d: %w", deliveryID, ctx.Err())
	}
	if res.failure == "" {
		return Result{}, s.recordSuccess(ctx, t, deliveryID, res, s.clock.Now())
	}
	return s.recordFailure(ctx, t, *d, res, s.clock.Now(), run)
}

// errGone is ready's error for a delivery that does not exist.
var errGone = errors.New("no such webhook delivery")

// gone is the job's error for ready's err: for a delivery that does not
// exist, an error River retries on the job's first attempt (run), and none
// after it. On Citus a job can run before the delivery its transaction
// wrote is visible on the tenant's worker (the coordinator commits before
// the workers' COMMIT PREPARED, docs/scaling.md), and the retry finds it;
// on one server it finds the delivery as missing as before.
func gone(err error, id int64, run queue.DeliveryAttempt) error {
	switch {
	case !errors.Is(err, errGone):
		return err
	case run.Attempt <= 1:
		return fmt.Errorf("webhook delivery %d: retried once, in case it is not visible yet: %w", id, err)
	}
	return nil
}

// ready reads delivery id for an attempt and returns it when it is its
// turn: nil when there is nothing to attempt (it is no longer pending, or
// its endpoint is disabled, which fails it; errGone when it does not
// exist), and a
// snooze when an earlier delivery of its key to the endpoint is pending.
// An earlier delivery that is due (being attempted now, here or in another
// process) is waited for in the worker, up to turnWait: this process's
// attempt of it says when it is recorded (turns).
func (s *Service) ready(ctx context.Context, t db.Tenant, id int64) (*attemptRow, time.Duration, error) {
	now := s.clock.Now()
	d, found, err := s.loadAttempt(ctx, t, id, now)
	switch {
	case err != nil:
		return nil, 0, err
	case !found:
		return nil, 0, errGone
	}
	if d.state == StatePending && d.enabled && d.blockedBy != 0 && !d.blockedUntil.After(now) {
		// The earlier delivery may have disabled the endpoint meanwhile:
		// what it read again goes through every check below.
		if d, err = s.awaitTurn(ctx, t, d); err != nil {
			return nil, 0, err
		}
		now = s.clock.Now()
	}
	switch {
	case d.state != StatePending:
		return nil, 0, nil
	case !d.enabled:
		return nil, 0, s.failDisabled(ctx, t, id, now)
	case d.blockedBy != 0:
		wait := min(max(d.blockedUntil.Sub(now), 0), s.cfg.RetryMax)
		return nil, wait + orderSlack + time.Duration(rand.Int64N(int64(orderSlack))), nil //nolint:gosec // G404: scheduling jitter
	}
	return &d, 0, nil
}

// awaitTurn waits, up to turnWait, for this process to record an attempt
// of d's key at d's endpoint, and reads d again. It reads d once more after
// it starts listening, so an attempt recorded just before is not missed.
func (s *Service) awaitTurn(ctx context.Context, t db.Tenant, d attemptRow) (attemptRow, error) {
	recorded, leave, _ := s.turns.join(turnKey{t.Schema, d.endpointID, d.key}, math.MaxInt)
	defer leave()
	load := func() (attemptRow, error) {
		next, found, err := s.loadAttempt(ctx, t, d.id, s.clock.Now())
		if err == nil && !found {
			next.state = StateFailed // gone: nothing to attempt
		}
		return next, err
	}
	next, err := load()
	if err != nil || next.state != StatePending || next.blockedBy == 0 {
		return next, err
	}
	timer := time.NewTimer(turnWait)
	defer timer.Stop()
	select {
	case <-recorded:
	case <-timer.C:
	case <-ctx.Done():
		return attemptRow{}, ctx.Err()
	}
	return load()
}

// jitter returns d ± frac·d, at random.
func jitter(d time.Duration, frac float64) time.Duration {
	return d + time.Duration((rand.Float64()*2-1)*frac*float64(d)) //nolint:gosec // G404: scheduling jitter, not a secret
}

// attemptRow is what an attempt reads in one statement.
type attemptRow struct {
	id           int64
	endpointID   int64
	key          string
	state        string
	createdAt    time.Time
	eventID      string
	body         []byte
	url          string
	enabled      bool
	secrets      []string
	blockedBy    int64
	blockedUntil time.Time
}

// loadAttempt reads delivery id with its event and endpoint, and the
// earliest pending delivery of its key to its endpoint before it (if any,
// and not stale). The reads of t's attempts that run at the same time share
// one statement (loadMany).
func (s *Service) loadAttempt(ctx context.Context, t db.Tenant, id int64, now time.Time) (attemptRow, bool, error) {
	r, err := s.loads.Do(ctx, t, loadItem{id: id, now: now})
	if err != nil {
		return attemptRow{}, false, fmt.Errorf("read webhook delivery %d: %w", id, err)
	}
	return r.row, r.found, nil
}

// failDisabled fails a pending delivery whose endpoint is disabled,
// without an attempt.
func (s *Service) failDisabled(ctx context.Context, t db.Tenant, id int64, now time.Time) error {
	if err := s.exec(ctx, nil, t, "fail_disabled", sqlq.Args{"id": id, "last_error": errEndpointDisabled, "now": now}); err != nil {
		return fmt.Errorf("fail webhook delivery %d: %w", id, err)
	}
	return nil
}

// recordSuccess marks the delivery succeeded and ends its endpoint's
// failure streak. The successes of t that are recorded at the same time
// share one statement (recordSuccesses).
func (s *Service) recordSuccess(ctx context.Context, t db.Tenant, id int64, res attemptResult, now time.Time) error {
	if _, err := s.successes.Do(ctx, t, success{id: id, status: res.status, latencyMS: latencyMS(res.latency), at: now}); err != nil {
		return fmt.Errorf("record webhook delivery %d: %w", id, err)
	}
	return nil
}

// recordFailure records a failed attempt: the endpoint's failure streak
// (disabling it after Config.DisableAfter), and the delivery's next attempt,
// or its failure when its retry window is over, the run was the job's last
// or the endpoint is disabled.
func (s *Service) recordFailure(ctx context.Context, t db.Tenant, d attemptRow, res attemptResult, now time.Time, run queue.DeliveryAttempt) (Result, error) {
	var out Result
	err := s.sql.Tx(ctx, func(tx pgx.Tx) error {
		out = Result{}
		var (
			failingSince time.Time
			enabled      bool
		)
		found, err := s.queryRow(ctx, tx, t, "record_endpoint_failure", sqlq.Args{"id": d.endpointID, "now": now},
			&failingSince, &enabled)
		if err != nil {
			return fmt.Errorf("record webhook endpoint %d failure: %w", d.endpointID, err)
		}
		if !found {
			return nil // deleted meanwhile, with its deliveries
		}
		if enabled && !failingSince.After(now.Add(-s.cfg.DisableAfter)) {
			reason := fmt.Sprintf("Disabled after every delivery attempt failed for %s; the last one: %s.",
				humanDuration(s.cfg.DisableAfter), res.failure)
			if err := s.exec(ctx, tx, t, "disable_endpoint", sqlq.Args{"id": d.endpointID, "reason": reason, "now": now}); err != nil {
				return fmt.Errorf("disable webhook endpoint %d: %w", d.endpointID, err)
			}
			enabled = false
			s.log.Warn("webhook endpoint disabled", "schema", t.Schema, "endpoint_id", d.endpointID,
				"failing_since", failingSince, "last_error", res.failure)
		}
		deadline := d.createdAt.Add(s.cfg.RetryFor)
		next := now.Add(s.RetryIn(run, deadline, now))
		var nextAt *time.Time
		state := StateFailed
		if enabled && !run.Last() && now.Before(deadline) {
			state, nextAt = StatePending, &next
			out = Result{Failure: res.failure}
		}
		var status *int
		if res.status != 0 {
			status = &res.status
		}
		if err := s.exec(ctx, tx, t, "record_failure", sqlq.Args{
			"id": d.id, "state": state, "status": status, "last_error": res.failure,
			"latency_ms": latencyMS(res.latency), "next_attempt_at": nextAt, "now": now,
		}); err != nil {
			return fmt.Errorf("record webhook delivery %d: %w", d.id, err)
		}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	return out, nil
}

// RetryIn is how long after a failed run of a delivery's job (run) the
// next is due: Config.RetryBase·2^(attempt-1), at most RetryMax, ±10%, and
// not past until, the end of the delivery's retry window
// (queue.WebhookRetryIn). The service records it as the delivery's next
// attempt and the worker's NextRetry schedules the job with it: both
// compute the same time from the job, its attempt and until.
func (s *Service) RetryIn(run queue.DeliveryAttempt, until, now time.Time) time.Duration {
	return queue.WebhookRetryIn(run, s.cfg.RetryBase, s.cfg.RetryMax, until, now)
}

func latencyMS(d time.Duration) int { return int(d.Milliseconds()) }

// humanDuration renders whole hours or minutes ("24 hours"), else Go's form.
func humanDuration(d time.Duration) string {
	plural := func(n int64, unit string) string {
		if n == 1 {
			return "1 " + unit
		}
		return fmt.Sprintf("%d %ss", n, unit)
	}
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return plural(int64(d/time.Hour), "hour")
	case d >= time.Minute && d%time.Minute == 0:
		return plural(int64(d/time.Minute), "minute")
	}
	return d.String()
}

// placeKey names one endpoint's places (Service.places).
type placeKey struct {
	schema   string
	endpoint int64
}

// takePlace takes one of the endpoint's Config.MaxInFlight places in this
// process, waiting up to wait for one when all are taken, and returns the
// function that gives it back and whether it waited. It gives up at once
// when MaxInFlight deliveries wait already (so a slow endpoint holds at
// most twice MaxInFlight of a process's webhook workers), and when ctx
// ends.
func (s *Service) takePlace(ctx context.Context, schema string, endpoint int64, wait time.Duration) (release func(), waited, ok bool) {
	places, leave, ok := s.places.join(placeKey{schema, endpoint}, 2*s.cfg.MaxInFlight)
	if !ok {
		return nil, false, false
	}
	release = func() {
		<-places
		leave()
	}
	select {
	case places <- struct{}{}:
		return release, false, true
	default:
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case places <- struct{}{}:
		return release, true, true
	case <-timer.C:
	case <-ctx.Done():
	}
	leave()
	return nil, true, false
}

// turnKey names the deliveries of one key to one endpoint (Service.turns).
type turnKey struct {
	schema   string
	endpoint int64
	key      string
}

// turnRecorded tells the deliveries waiting in this process for an earlier
// one of k (awaitTurn) that an attempt of k was recorded.
func (s *Service) turnRecorded(k turnKey) {
	if recorded, ok := s.turns.detach(k); ok {
		close(recorded)
	}
}
