package webhooks

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/drain"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/sqlq"
)

// The webhook outbox (docs/design.md, §Webhooks). Emit writes a
// transaction's events as one row of the organization's webhook_outbox;
// once the transaction has committed, its process wakes the organization's
// expansion here, which turns the rows into deliveries and their jobs
// (through Config.Jobs: the job outbox, in the tenant's schema), oldest
// row first, each batch in one transaction that deletes the
// rows it expanded. So the change's transaction (the send path's, above
// all) writes one row where it wrote two per event and endpoint, and the
// rest waits behind the yield gate like the attempts themselves.
//
// Expansions of one organization are serialized by a transaction-scoped
// advisory lock, so its deliveries get their ids in the order of its
// outbox rows (the order of its events) whichever process expands them.
// A row whose process ended before expanding it is found by SweepOutbox,
// which a periodic job runs over every organization.

// expander runs the expansions of one process: at most one goroutine per
// organization (drain.Runner), and Config.Expansions transactions at once.
type expander struct {
	runner *drain.Runner[db.Tenant]
	slots  chan struct{}

	// expanded counts the rows this process expanded, failed its failed
	// expansions (Service.OutboxExpanded, OutboxFailures).
	expanded, failed atomic.Int64
}

// newExpander returns s's expander: each organization's drain expands its
// outbox (ExpandOutbox) until it finds it empty; an error is logged, and
// the row stays for the next wake or the sweep.
func newExpander(s *Service) (*expander, error) {
	r, err := drain.New(drain.Config[db.Tenant]{
		Run: func(ctx context.Context, t db.Tenant) error {
			_, err := s.ExpandOutbox(ctx, t)
			return err
		},
		OnError: func(t db.Tenant, err error) {
			s.log.Warn("expand webhook outbox", "schema", t.Schema, "error", err)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("webhook outbox: %w", err)
	}
	return &expander{runner: r, slots: make(chan struct{}, s.cfg.Expansions)}, nil
}

// wake makes sure t's outbox is expanded: it starts t's expansion, or,
// when one is running, has it look again before it ends. It does not block.
func (x *expander) wake(t db.Tenant) { x.runner.Wake(t) }

// close stops the expansions (a transaction under way rolls back, its rows
// stay) and waits for their goroutines.
func (x *expander) close() { x.runner.Close() }

// ExpandOutbox expands t's outbox now, in this goroutine, until it is
// empty (through the yield gate, batch by batch), and returns how many rows
// it expanded. The process's own expansion does this after each commit
// that recorded events; tests call it to see the deliveries at once.
func (s *Service) ExpandOutbox(ctx context.Context, t db.Tenant) (int, error) {
	total := 0
	for {
		n, err := s.expandBatch(ctx, t)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
}

// SweepOutbox wakes t's expansion in this process when its outbox holds a
// row, and reports whether it did: the rows of a process that ended before
// it expanded them (jobs.WebhookOutboxWorker runs it over every
// organization).
func (s *Service) SweepOutbox(ctx context.Context, t db.Tenant) (bool, error) {
	var pending bool
	if _, err := s.queryRow(ctx, nil, t, "outbox_pending", nil, &pending); err != nil {
		return false, fmt.Errorf("look at the webhook outbox of %s: %w", t.Schema, err)
	}
	if pending {
		s.outbox.wake(t)
	}
	return pending, nil
}

// Close stops the process's outbox expansions and waits for them to end.
// Rows not expanded stay in the outbox, for the next process.
func (s *Service) Close() { s.outbox.close() }

// outboxGateWait is how long an expansion waits at the yield gate at a
// time before it looks again (at its context, mostly).
const outboxGateWait = 10 * time.Second

// expandBatch expands the oldest rows of t's outbox in one transaction,
// after the yield gate admits it: Config.OutboxBatch rows, or one while
// the gate is closed (a busy API and send path), so that
// the writes deferred from the send path do not come back into it. It
// returns how many rows it expanded (0: the outbox was empty).
func (s *Service) expandBatch(ctx context.Context, t db.Tenant) (int, error) {
	limit := s.cfg.OutboxBatch
	if s.cfg.Yield != nil {
		for !s.cfg.Yield.Acquire(ctx, outboxGateWait) {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		if s.cfg.Yield.Closed() {
			limit = 1
		}
	}
	select {
	case s.outbox.slots <- struct{}{}:
		defer func() { <-s.outbox.slots }()
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	var rows int
	err := s.sql.Tx(ctx, func(tx pgx.Tx) error {
		var err error
		rows, err = s.expand(ctx, tx, t, limit)
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			s.outbox.failed.Add(1)
		}
		return 0, fmt.Errorf("expand the webhook outbox of %s: %w", t.Schema, err)
	}
	s.outbox.expanded.Add(int64(rows))
	return rows, nil
}

// OutboxExpanded is how many outbox rows this process has turned into
// deliveries since it started.
func (s *Service) OutboxExpanded() int64 { return s.outbox.expanded.Load() }

// OutboxFailures is how many of this process's outbox expansions have
// failed since it started (their rows stay for the next wake or the sweep).
func (s *Service) OutboxFailures() int64 { return s.outbox.failed.Load() }

// expand turns at most limit of t's oldest outbox rows into deliveries and
// their jobs in tx, and deletes them: in one statement on one server
// (queries/expand.sql), in routed ones on Citus (routed.go). The
// deliveries of an endpoint deleted since are dropped; those of an
// endpoint disabled since are made (and fail at their attempt, as if they
// had been made before).
func (s *Service) expand(ctx context.Context, tx pgx.Tx, t db.Tenant, limit int) (int, error) {
	if err := s.exec(ctx, tx, t, "lock_outbox", sqlq.Args{"key": "webhook_outbox:" + t.Schema}); err != nil {
		return 0, fmt.Errorf("lock: %w", err)
	}
	var rows int
	var ids, endpoints []int64
	var created []time.Time
	if s.cfg.Routed {
		var made []delivered
		var err error
		if rows, made, err = s.expandRouted(ctx, tx, t, limit); err != nil {
			return 0, err
		}
		for _, d := range made {
			ids, endpoints, created = append(ids, d.id), append(endpoints, d.endpoint), append(created, d.created)
		}
	} else if _, err := s.queryRow(ctx, tx, t, "expand", sqlq.Args{"limit": limit, "now": s.clock.Now()},
		&rows, &ids, &endpoints, &created); err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return rows, nil
	}
	jobs := make([]river.InsertManyParams, len(ids))
	for i, id := range ids {
		jobs[i] = queue.WebhookDeliveryJob(queue.WebhookDeliveryArgs{
			TenantRef: queue.RefOf(t), DeliveryID: id, EndpointID: endpoints[i],
			RetryUntil: created[i].Add(s.cfg.RetryFor),
		})
	}
	if _, err := s.jobs.InsertManyFastTx(ctx, tx, jobs); err != nil {
		return 0, fmt.Errorf("queue webhook deliveries: %w", err)
	}
	return rows, nil
}
