package joboutbox

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/drain"
	"github.com/bizmsg/platform/platform/sqlq"
)

// mover runs the moves of one process: at most one goroutine per tenant
// (drain.Runner), and Config.Moves moves at once.
type mover struct {
	runner *drain.Runner[db.Tenant]
	slots  chan struct{}
}

// newMover returns o's mover: each tenant's drain moves its outbox (Move);
// an error is logged, and the rows stay for the next wake or the sweep.
func newMover(o *Outbox) (*mover, error) {
	r, err := drain.New(drain.Config[db.Tenant]{
		Run: func(ctx context.Context, t db.Tenant) error {
			_, err := o.Move(ctx, t)
			return err
		},
		OnError: func(t db.Tenant, err error) {
			o.log.Warn("move job outbox", "schema", t.Schema, "error", err)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("job outbox: %w", err)
	}
	return &mover{runner: r, slots: make(chan struct{}, o.cfg.Moves)}, nil
}

// Move moves t's outbox into River now, in this goroutine, batch by batch
// (Config.Batch rows each), until a batch comes back short, and returns
// how many jobs it moved. The process's own mover does this after each
// commit that wrote the outbox; tests call it to see the jobs at once.
func (o *Outbox) Move(ctx context.Context, t db.Tenant) (int, error) {
	return o.move(ctx, t, false)
}

// Flush is Move for a caller that needs the rows it committed moved (its
// coordinator writes applied) when it returns: where Move skips the rows
// another move holds, Flush waits until that move has ended (its River
// transaction, which commits first, committed) and takes what it left.
// A request calls it after its commit, so that what it answers is already
// true on the coordinator; the mover and the sweep stay the fallback.
func (o *Outbox) Flush(ctx context.Context, t db.Tenant) (int, error) {
	return o.move(ctx, t, true)
}

// move moves t's outbox batch by batch until a batch comes back short;
// wait says whether to wait for rows another move holds (Flush).
func (o *Outbox) move(ctx context.Context, t db.Tenant, wait bool) (int, error) {
	total := 0
	for {
		n, err := o.moveBatch(ctx, t, wait)
		total += n
		if err != nil || n < o.cfg.Batch {
			return total, err
		}
	}
}

// Sweep wakes t's mover in this process when t's outbox holds a row, and
// reports whether it did: the rows of a process that ended before moving
// them (a periodic job runs it over every tenant, and each worker process as it starts).
func (o *Outbox) Sweep(ctx context.Context, t db.Tenant) (bool, error) {
	var pending bool
	err := o.query(ctx, nil, t, "pending", nil, func(r db.Rows) error {
		if !r.Next() {
			return r.Err()
		}
		return r.Scan(&pending)
	})
	if err != nil {
		return false, fmt.Errorf("look at the job outbox of %s: %w", t.Schema, err)
	}
	if pending {
		o.mover.runner.Wake(t)
	}
	return pending, nil
}

// moveBatch moves at most Config.Batch of t's oldest outbox rows: it
// deletes them in a transaction on t's schema, inserts their jobs in a
// transaction on River's schema and commits it, and then commits the
// delete (see the package comment). It returns how many it moved.
func (o *Outbox) moveBatch(ctx context.Context, t db.Tenant, wait bool) (int, error) {
	select {
	case o.mover.slots <- struct{}{}:
		defer func() { <-o.mover.slots }()
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	var n int
	err := o.cfg.Prepared.Tx(ctx, func(tx pgx.Tx) error {
		// The delete's commit need not wait for its WAL flush: lost in a
		// crash, it leaves rows whose jobs River has (its commit was
		// flushed first), which the next move inserts again, harmlessly.
		// The next move of the tenant so waits for one flush, not two.
		if err := o.query(ctx, tx, t, "async_commit", nil, func(db.Rows) error { return nil }); err != nil {
			return fmt.Errorf("asynchronous commit: %w", err)
		}
		plain, unique, applied, err := o.take(ctx, tx, t, wait)
		n = len(plain) + len(unique) + len(applied)
		if err != nil || n == 0 {
			return err
		}
		if o.cfg.BeforeInsert != nil {
			if err := o.cfg.BeforeInsert(ctx, t, n); err != nil {
				return err
			}
		}
		err = pgx.BeginFunc(ctx, o.cfg.DB.Pool, func(rtx pgx.Tx) error {
			for _, a := range applied {
				if err := o.cfg.Appliers[a.kind](ctx, rtx, t, a.args); err != nil {
					return fmt.Errorf("apply %s: %w", a.kind, err)
				}
			}
			if len(plain) > 0 {
				if _, err := o.cfg.River.InsertManyFastTx(ctx, rtx, plain); err != nil {
					return err
				}
			}
			if len(unique) > 0 {
				if _, err := o.cfg.River.InsertManyTx(ctx, rtx, unique); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("insert %d jobs into River: %w", n, err)
		}
		if o.cfg.AfterInsert != nil {
			return o.cfg.AfterInsert(ctx, t, n)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("move the job outbox of %s: %w", t.Schema, err)
	}
	return n, nil
}

// take deletes t's oldest outbox rows in tx (locked, skipping those
// another move holds unless wait) and returns their jobs: those River may
// insert with COPY, the unique ones, which need River's insert that skips
// a duplicate, and the coordinator writes of an Applier's kind, oldest
// first.
func (o *Outbox) take(ctx context.Context, tx pgx.Tx, t db.Tenant, wait bool) (plain, unique []river.InsertManyParams, applied []storedArgs, err error) {
	take := "take"
	if wait {
		take = "take_wait"
	}
	err = o.query(ctx, tx, t, take, sqlq.Args{"limit": o.cfg.Batch}, func(r db.Rows) error {
		for r.Next() {
			var (
				a                  storedArgs
				queue              string
				priority, attempts int16
				scheduled          *time.Time
				states             []string
			)
			if err := r.Scan(&a.kind, &a.args, &queue, &priority, &attempts, &scheduled, &states); err != nil {
				return err
			}
			if _, ok := o.cfg.Appliers[a.kind]; ok {
				applied = append(applied, a)
				continue
			}
			opts := &river.InsertOpts{Queue: queue, Priority: int(priority), MaxAttempts: int(attempts)}
			if scheduled != nil {
				opts.ScheduledAt = *scheduled
			}
			if states == nil {
				plain = append(plain, river.InsertManyParams{Args: a, InsertOpts: opts})
				continue
			}
			opts.UniqueOpts = river.UniqueOpts{ByArgs: true, ByState: make([]rivertype.JobState, len(states))}
			for i, s := range states {
				opts.UniqueOpts.ByState[i] = rivertype.JobState(s)
			}
			unique = append(unique, river.InsertManyParams{Args: a, InsertOpts: opts})
		}
		return r.Err()
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("take outbox rows: %w", err)
	}
	return plain, unique, applied, nil
}

// query runs named query name of t with args (in tx, or on the pool when
// tx is nil) through Config.Prepared and hands its rows to scan.
func (o *Outbox) query(ctx context.Context, tx pgx.Tx, t db.Tenant, name string, args sqlq.Args, scan func(db.Rows) error) error {
	return o.cfg.Prepared.Named(ctx, tx, o.q, name, t.Quoted(), args, scan)
}

// storedArgs is a job's arguments as the outbox stored them: its kind and
// its JSON, which River inserts as they are.
type storedArgs struct {
	kind string
	args []byte
}

// Kind is the job's kind.
func (a storedArgs) Kind() string { return a.kind }

// MarshalJSON returns the stored JSON.
func (a storedArgs) MarshalJSON() ([]byte, error) { return json.RawMessage(a.args), nil }
