// Package joboutbox is the job outbox (docs/scaling.md, §Jobs): the River
// jobs of a tenant's transaction are written as rows of the tenant's
// job_outbox table, in that transaction, and moved into River afterwards.
// So no transaction of the send path writes a tenant schema and River's
// river_job together: on Citus the tenant schema lives on a worker node and
// River on the coordinator, and Citus commits such a transaction in one
// phase on each, which is not atomic.
//
// An Outbox is a queue.Inserter: a service that queued its jobs with
// River's InsertTx or InsertManyFastTx in its transaction takes the Outbox
// instead and changes nothing else. Each call writes one statement into
// the tenant's job_outbox (the tenant is the one the jobs' arguments name,
// queue.TenantRef) and wakes this process's mover of that tenant once the
// transaction has committed (db.AfterCommit, so the transaction must be
// begun by db.BeginFunc), so the jobs reach River within milliseconds.
//
// A move (Move) takes the tenant's oldest rows in a transaction on the
// tenant's schema (DELETE … RETURNING, the rows locked FOR UPDATE SKIP
// LOCKED so that movers of other processes take others), inserts their
// jobs into River in a transaction of its own on River's schema, commits
// that, and only then commits the delete. Nothing is lost: until the
// delete commits the rows stay, and a move that fails anywhere leaves
// them for the next. A move that dies between the two commits leaves rows
// whose jobs River already has, and the next move inserts them again;
// every kind the outbox carries is safe to insert twice
// (docs/scaling.md, §Jobs): a delivery job finds its message claimed or
// sent (as a job handed over by delivery does), a release finds its
// message no longer scheduled, and webhook and campaign jobs are unique
// in River while not finished, so River skips the second.
//
// A row may also be a coordinator write instead of a job: a kind for which
// Config.Appliers holds an Applier is not inserted into River but applied
// by that function in the move's transaction on the coordinator (the one
// that inserts the jobs: River's tables and central's are both there). A
// tenant's transaction so changes a coordinator table (the sender
// directory, the audit log) without writing it: it writes an outbox row,
// and the move applies it. An applier must be idempotent, as a job is
// safe to insert twice: a move that dies between its commits applies the
// row again.
//
// On one server the outbox has nothing to keep apart: the tenant schemas
// and River's tables are on the same server, and one transaction writes
// both atomically. There (Config.Direct, which platform/app sets when the
// database is not a Citus coordinator) the Outbox hands the jobs to River
// in the writer's own transaction, as the writer would without it, and
// Applies answers false, so writers apply their coordinator writes in
// their own transaction too. Moves and the sweep still run: they move the
// rows an earlier process left (an installation that ran on Citus, or
// before the mode existed).
//
// Rows whose process ended before moving them are found by Sweep, which
// a periodic job runs over every tenant, and each worker process once as
// it starts. Flush is Move for a request that needs its rows applied
// before it answers: it waits for the rows another move holds.
package joboutbox

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/sqlq"
)

// queries are the outbox's named queries (platform/sqlq), all pgx
// statements (sqlq.Queries.Pgx) run through Config.Prepared: its insert
// joins the writer's pgx transaction on the send path, and a move's take
// runs in its own pgx transaction.
//
//go:embed queries/*.sql
var queries embed.FS

// River is what the mover (and Direct) needs of River: the process's
// client is one.
type River interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	InsertManyFastTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) (int, error)
	InsertManyTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
}

// Applier applies a coordinator write of tenant t, an outbox row whose
// args are the JSON its writer stored, in tx: the move's transaction on
// the coordinator, which commits before the row's delete. It must be
// idempotent: a move that dies between the two commits applies the row
// again. An error rolls the move back (its rows stay for the next).
type Applier func(ctx context.Context, tx pgx.Tx, t db.Tenant, args []byte) error

// Config configures an Outbox.
type Config struct {
	// DB is the database. Required.
	DB *db.DB
	// Prepared runs the outbox's statements (prepared per connection).
	// Required.
	Prepared *db.Prepared
	// River inserts the moved jobs. Required.
	River River
	// Appliers apply the rows of their kinds, coordinator writes, instead
	// of inserting them into River (the package comment). The kinds'
	// writers register them (platform/app).
	Appliers map[string]Applier
	// Direct hands the jobs to River in the writer's transaction instead
	// of writing them into the outbox, and applies no coordinator write
	// (Applies is false): right on one server, where that transaction
	// writes the tenant schema and River's tables atomically, and wrong on
	// Citus (the package comment).
	Direct bool
	// Batch is the most rows one move takes. Default 500.
	Batch int
	// Moves bounds the moves of this process that run at once (each
	// holds two connections while River's insert commits). Default 4.
	Moves int
	// BeforeInsert and AfterInsert, when set, run in each move with the
	// number of jobs it took: before River's transaction begins, and after
	// it has committed, before the outbox rows' delete commits. An error
	// of either rolls the delete back, as a process dying there would
	// (tests).
	BeforeInsert, AfterInsert func(ctx context.Context, t db.Tenant, jobs int) error
	// Logger. Default slog.Default().
	Logger *slog.Logger
}

// Outbox writes jobs into their tenant's job_outbox and moves them into
// River. It is safe for concurrent use.
type Outbox struct {
	cfg   Config
	log   *slog.Logger
	q     *sqlq.Queries
	mover *mover
}

// New validates cfg and returns an Outbox; Close stops its moves.
func New(cfg Config) (*Outbox, error) {
	switch {
	case cfg.DB == nil || cfg.DB.Pool == nil:
		return nil, errors.New("joboutbox: Config.DB is required")
	case cfg.Prepared == nil:
		return nil, errors.New("joboutbox: Config.Prepared is required")
	case cfg.River == nil:
		return nil, errors.New("joboutbox: Config.River is required")
	}
	defaults.Positive(&cfg.Batch, 500)
	defaults.Positive(&cfg.Moves, 4)
	defaults.Logger(&cfg.Logger)
	q, err := sqlq.Load(queries, "queries")
	if err != nil {
		return nil, fmt.Errorf("joboutbox: %w", err)
	}
	o := &Outbox{cfg: cfg, log: cfg.Logger.With("component", "joboutbox"), q: q}
	if o.mover, err = newMover(o); err != nil {
		return nil, err
	}
	return o, nil
}

// Applies reports whether rows of kind are applied by an Applier rather
// than inserted into River: a writer whose kind is not registered would
// see its rows become River jobs that no worker works.
func (o *Outbox) Applies(kind string) bool {
	if o.cfg.Direct {
		return false
	}
	_, ok := o.cfg.Appliers[kind]
	return ok
}

// tenantOf is a job's arguments that name their tenant (queue.TenantRef,
// which every job of a tenant embeds).
type tenantOf interface {
	Tenant() (db.Tenant, error)
}

// InsertTx writes args's job, with opts over the job's own InsertOpts as
// River merges them, into its tenant's outbox in tx. The result holds no
// job: the job is made when it is moved. Direct, River inserts it in tx.
func (o *Outbox) InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	if o.cfg.Direct {
		if _, err := jobTenant(args); err != nil {
			return nil, err
		}
		return o.cfg.River.InsertTx(ctx, tx, args, opts)
	}
	if _, err := o.InsertManyFastTx(ctx, tx, []river.InsertManyParams{{Args: args, InsertOpts: opts}}); err != nil {
		return nil, err
	}
	return &rivertype.JobInsertResult{}, nil
}

// InsertManyFastTx writes params's jobs into their tenant's outbox in tx,
// one statement per tenant (a call names one, in practice), and has the
// tenant's mover run once tx has committed. It returns how many it wrote.
// Direct, River inserts them in tx.
func (o *Outbox) InsertManyFastTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) (int, error) {
	if len(params) == 0 {
		return 0, nil
	}
	if o.cfg.Direct {
		for _, p := range params {
			if _, err := jobTenant(p.Args); err != nil {
				return 0, err
			}
		}
		return o.cfg.River.InsertManyFastTx(ctx, tx, params)
	}
	rows := make(map[db.Tenant]*outboxRows, 1)
	var order []db.Tenant
	for _, p := range params {
		t, err := jobTenant(p.Args)
		if err != nil {
			return 0, err
		}
		r := rows[t]
		if r == nil {
			r = &outboxRows{}
			rows[t] = r
			order = append(order, t)
		}
		if err := r.add(p); err != nil {
			return 0, err
		}
	}
	for _, t := range order {
		if err := o.write(ctx, tx, t, rows[t]); err != nil {
			return 0, err
		}
	}
	return len(params), nil
}

// jobTenant is the tenant args's job names. Direct checks it too, so that
// a job that would fail on Citus fails on one server as well.
func jobTenant(args river.JobArgs) (db.Tenant, error) {
	ta, ok := args.(tenantOf)
	if !ok {
		return db.Tenant{}, fmt.Errorf("job outbox: %s job names no tenant", args.Kind())
	}
	t, err := ta.Tenant()
	if err != nil {
		return db.Tenant{}, fmt.Errorf("job outbox: %s job: %w", args.Kind(), err)
	}
	return t, nil
}

// write inserts r into t's outbox in tx and wakes t's mover after the
// commit. A transaction db.BeginFunc did not begin has no commit hook and
// is refused (db.ErrNoCommitHook): its jobs would wait for the sweep.
func (o *Outbox) write(ctx context.Context, tx pgx.Tx, t db.Tenant, r *outboxRows) error {
	if err := db.AfterCommit(tx, func() { o.mover.runner.Wake(t) }); err != nil {
		return fmt.Errorf("job outbox of %s: %w", t.Schema, err)
	}
	for from := 0; from < len(r.kinds); from += maxInsertRows {
		to := min(from+maxInsertRows, len(r.kinds))
		// One statement for the rows (queries/insert.sql, its VALUES row
		// written once per job). A send writes one job, so its text is
		// the same at every send and Prepared keeps it prepared, as it
		// does any other length that recurs.
		text, args, err := o.q.PgxRows("insert", t.Quoted(), r.rows(from, to))
		if err == nil {
			err = o.cfg.Prepared.Exec(ctx, tx, text, args...)
		}
		if err != nil {
			return fmt.Errorf("write %d jobs into the job outbox of %s: %w", len(r.kinds), t.Schema, err)
		}
	}
	return nil
}

// Close stops this process's moves (one under way rolls back, its rows
// stay) and waits for them to end.
func (o *Outbox) Close() { o.mover.runner.Close() }

// outboxRows are jobs to write into one tenant's outbox, as the columns of
// queries/insert.sql.
type outboxRows struct {
	kinds, queues        []string
	args                 []string
	priorities, attempts []int16
	scheduled            []*time.Time
	unique               []*string
}

// add appends p's job, its options merged as River merges them (p's
// InsertOpts over the arguments' own). Options the outbox does not carry
// (tags, metadata, pending, unique by period or queue) are refused.
func (r *outboxRows) add(p river.InsertManyParams) error {
	opts := river.InsertOpts{}
	if p.InsertOpts != nil {
		opts = *p.InsertOpts
	}
	var own river.InsertOpts
	if w, ok := p.Args.(river.JobArgsWithInsertOpts); ok {
		own = w.InsertOpts()
	}
	kind := p.Args.Kind()
	uniq := opts.UniqueOpts
	if !uniq.ByArgs && uniq.ByState == nil && uniq.ByPeriod == 0 && !uniq.ByQueue && !uniq.ExcludeKind {
		uniq = own.UniqueOpts
	}
	switch {
	case len(opts.Tags) > 0 || len(own.Tags) > 0 || len(opts.Metadata) > 0 || opts.Pending:
		return fmt.Errorf("job outbox: %s job: tags, metadata and pending jobs are not carried", kind)
	case uniq.ByPeriod != 0 || uniq.ByQueue || uniq.ExcludeKind || (len(uniq.ByState) > 0 && !uniq.ByArgs):
		return fmt.Errorf("job outbox: %s job: only uniqueness by arguments (and states) is carried", kind)
	}
	enc, err := json.Marshal(p.Args)
	if err != nil {
		return fmt.Errorf("job outbox: encode %s job: %w", kind, err)
	}
	var scheduled *time.Time
	if at := cmp.Or(opts.ScheduledAt, own.ScheduledAt); !at.IsZero() {
		scheduled = &at
	}
	var unique *string
	if uniq.ByArgs {
		states := uniq.ByState
		if len(states) == 0 {
			states = rivertype.UniqueOptsByStateDefault()
		}
		s := make([]string, len(states))
		for i, st := range states {
			s[i] = string(st)
		}
		u := "{" + strings.Join(s, ",") + "}"
		unique = &u
	}
	r.kinds = append(r.kinds, kind)
	r.args = append(r.args, string(enc))
	r.queues = append(r.queues, cmp.Or(opts.Queue, own.Queue))
	r.priorities = append(r.priorities, int16(cmp.Or(opts.Priority, own.Priority)))
	r.attempts = append(r.attempts, int16(min(cmp.Or(opts.MaxAttempts, own.MaxAttempts), 32767)))
	r.scheduled = append(r.scheduled, scheduled)
	r.unique = append(r.unique, unique)
	return nil
}

// maxInsertRows is the most rows one insert writes: 7 arguments a row,
// well under Postgres's 65,535.
const maxInsertRows = 1000

// rows are the arguments of queries/insert.sql for rows from to to of r,
// one Args a row: the kind, the arguments' JSON, the queue, priority,
// attempts, the time it is scheduled at, and the unique states as the
// text of a text[] or NULL.
func (r *outboxRows) rows(from, to int) []sqlq.Args {
	out := make([]sqlq.Args, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, sqlq.Args{"kind": r.kinds[i], "args": r.args[i], "queue": r.queues[i],
			"priority": r.priorities[i], "max_attempts": r.attempts[i], "scheduled_at": r.scheduled[i],
			"unique_states": r.unique[i]})
	}
	return out
}
