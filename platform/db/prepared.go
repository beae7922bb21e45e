package db

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/sqlq"
)

// Prepared runs the hot paths' statements whose text names a tenant schema
// (acceptance, delivery's claim and sent record) with $n arguments, and
// keeps, per pool connection, a bounded set of them prepared: a prepared
// statement is parsed, analysed and (after five runs, once Postgres settles
// on a generic plan) planned once per connection instead of at every run,
// which is most of what a one-message statement costs Postgres
// (docs/performance.md, §Prepared statements).
//
// The bound is what makes this safe with many tenants: a tenant's statements
// have texts of their own, and Postgres keeps roughly 100 KB per prepared
// statement per connection. A text is prepared on a connection the second
// time that connection runs it (a tenant seen once costs no memory). When
// the connection's set is full, the least recently used statement gives up
// its place only if it has been idle for Config.IdleAfter; otherwise the new
// text runs unprepared. So a set of equally busy tenants larger than the
// bound never thrashes (each run of a text that is not prepared costs what
// it cost before: one round trip with the simple protocol), and the set
// follows the busy tenants as load shifts.
//
// It is safe for concurrent use: each connection's set is only touched by
// the goroutine that holds the connection.
type Prepared struct {
	db  *DB
	cfg PreparedConfig
}

// setKey is where a connection's custom data holds its stmtSet.
const setKey = "bizmsg.prepared"

// PreparedConfig bounds Prepared.
type PreparedConfig struct {
	// DB is the database whose pool runs the statements. Required.
	DB *DB
	// MaxPerConn is the most statements prepared on one connection. 0
	// takes the default (64); a negative value prepares nothing (every
	// statement runs with the simple protocol).
	MaxPerConn int
	// IdleAfter is how long a prepared statement must go unused before a
	// new text may take its place. Default 1 minute.
	IdleAfter time.Duration
	// Now is the clock (tests). Default time.Now.
	Now func() time.Time
	// Observe, when set, is told each statement's text and outcome after
	// it ran (tests count statements with it; a metric could).
	Observe func(query string, err error)
}

func (c *PreparedConfig) setDefaults() {
	if c.MaxPerConn == 0 {
		c.MaxPerConn = 64
	}
	defaults.Positive(&c.IdleAfter, time.Minute)
	if c.Now == nil {
		c.Now = time.Now
	}
}

// NewPrepared checks cfg and returns a Prepared over its database's pool.
func NewPrepared(cfg PreparedConfig) (*Prepared, error) {
	if cfg.DB == nil {
		return nil, errors.New("db: PreparedConfig.DB is required")
	}
	cfg.setDefaults()
	return &Prepared{db: cfg.DB, cfg: cfg}, nil
}

// Rows is what a scan function reads.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// Int64s is the scan function of a statement that returns one bigint
// column (ids): it appends each row's value to *dst.
func Int64s(dst *[]int64) func(Rows) error {
	return func(r Rows) error {
		for r.Next() {
			var v int64
			if err := r.Scan(&v); err != nil {
				return err
			}
			*dst = append(*dst, v)
		}
		return r.Err()
	}
}

// errStalePlan marks a prepared statement that Postgres refused in a
// transaction because its result columns changed; Tx runs the
// transaction again.
var errStalePlan = errors.New("prepared statement's plan is stale")

// Query runs query with args and hands its rows to scan, on a pool
// connection when tx is nil, else in tx (a transaction begun by Tx). Either
// way the statement is prepared on its connection when the connection's set
// admits it (see Prepared). It returns scan's error, or the statement's;
// when both failed (a scan that found no row because the statement's
// connection was lost), the statement's error wraps scan's.
func (p *Prepared) Query(ctx context.Context, tx pgx.Tx, query string, args []any, scan func(Rows) error) error {
	err := p.query(ctx, tx, query, args, scan)
	if p.cfg.Observe != nil {
		p.cfg.Observe(query, err)
	}
	return err
}

// QueryFirst runs query as Query does and hands its first row, if it has
// one, to scan; it reports whether there was one. It is the read of one row
// by its key, where no row is an answer (404), not an error.
func (p *Prepared) QueryFirst(ctx context.Context, tx pgx.Tx, query string, args []any, scan func(Rows) error) (bool, error) {
	found := false
	err := p.Query(ctx, tx, query, args, func(r Rows) error {
		if !r.Next() {
			return nil
		}
		found = true
		return scan(r)
	})
	return found, err
}

func (p *Prepared) query(ctx context.Context, tx pgx.Tx, query string, args []any, scan func(Rows) error) error {
	if tx != nil {
		return p.runOn(ctx, tx.Conn(), true, query, args, scan)
	}
	c, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	return p.runOn(ctx, c.Conn(), false, query, args, scan)
}

// runOn runs query on conn, prepared when conn's set admits it. A prepared
// statement whose plan a migration made stale (Postgres refuses it before
// executing anything) is prepared afresh at its next run; this run is
// repeated unprepared, or, inTx, where the refusal aborted the
// transaction, reported as errStalePlan for Tx to run the transaction
// again.
func (p *Prepared) runOn(ctx context.Context, conn *pgx.Conn, inTx bool, query string, args []any, scan func(Rows) error) error {
	set := p.set(conn)
	name, err := set.use(ctx, conn, query, p.cfg)
	if err != nil {
		return err
	}
	err = run(ctx, conn, name, query, args, scan)
	if name == "" || !isStalePlan(err) {
		return err
	}
	set.reprepare(ctx, conn, query)
	if inTx {
		return fmt.Errorf("%w: %w", errStalePlan, err)
	}
	return run(ctx, conn, "", query, args, scan)
}

// Exec runs query (a statement without result rows) like Query.
func (p *Prepared) Exec(ctx context.Context, tx pgx.Tx, query string, args ...any) error {
	return p.Query(ctx, tx, query, args, func(r Rows) error {
		for r.Next() {
		}
		return nil
	})
}

// Tx runs fn in a transaction on one pool connection and commits it when
// fn returns nil (rolls it back otherwise), through BeginFunc (AfterCommit
// works in fn). Query and Exec with the
// transaction use that connection's prepared statements. When one of them
// finds its plan stale (a migration changed its result columns), the
// transaction is rolled back and fn runs once more, on statements prepared
// afresh.
func (p *Prepared) Tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	err := p.tx(ctx, fn)
	if errors.Is(err, errStalePlan) {
		err = p.tx(ctx, fn)
	}
	return err
}

func (p *Prepared) tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	c, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	return BeginFunc(ctx, c, fn)
}

// acquire takes a pool connection, waiting at most Config.AcquireTimeout
// (acquireBound) when ctx allows longer.
func (p *Prepared) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	c, err := p.db.Pool.Acquire(ctx)
	if err != nil {
		return nil, acquireError(ctx, err)
	}
	return c, nil
}

// run executes query on conn, as the prepared statement name when name is
// set, else with the simple protocol.
func run(ctx context.Context, conn *pgx.Conn, name, query string, args []any, scan func(Rows) error) error {
	var rows pgx.Rows
	var err error
	if name != "" {
		rows, err = conn.Query(ctx, name, args...)
	} else {
		rows, err = conn.Query(ctx, query, append([]any{pgx.QueryExecModeSimpleProtocol}, args...)...)
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	if err := scan(rows); err != nil {
		// A statement that fails (its connection lost, the server gone)
		// ends its rows early, and a scan that wanted a row fails for
		// that: the statement's error is the cause, kept first so that
		// it is what the caller classifies (a 503, not a 500).
		rows.Close()
		if stmtErr := rows.Err(); stmtErr != nil && !errors.Is(err, stmtErr) {
			return fmt.Errorf("%w (then the scan: %w)", stmtErr, err)
		}
		return err
	}
	rows.Close()
	return rows.Err()
}

// isStalePlan reports Postgres's refusal to run a prepared statement whose
// result columns changed since it was prepared.
func isStalePlan(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "0A000" && pe.Message == "cached plan must not change result type"
}

// PreparedCount reports how many statements are prepared on conn by p (tests
// and diagnostics).
func (p *Prepared) PreparedCount(conn *pgx.Conn) int { return len(p.set(conn).stmts) }

// set returns conn's statement set, creating it on first use. The set lives
// in the connection's custom data, so it goes with the connection.
func (p *Prepared) set(conn *pgx.Conn) *stmtSet {
	data := conn.PgConn().CustomData()
	if s, ok := data[setKey].(*stmtSet); ok {
		return s
	}
	s := &stmtSet{stmts: make(map[string]*stmt), seen: make(map[uint64]struct{}), seed: maphash.MakeSeed()}
	data[setKey] = s
	return s
}

// stmtSet is one connection's prepared statements and the texts it has run
// once.
type stmtSet struct {
	stmts map[string]*stmt // by SQL text
	// seen holds the hashes of texts run once: a text is a few KB, and a
	// connection may meet thousands once each. A collision only prepares
	// a text on its first run.
	seen map[uint64]struct{}
	seed maphash.Seed
	next int // for statement names
}

type stmt struct {
	name     string
	lastUsed time.Time
}

// seenMax bounds the texts a connection remembers having run once; past it
// the memory starts afresh (a text then needs two more runs to be prepared).
const seenMax = 4096

// use returns the name of query's prepared statement on conn, preparing it
// if the set admits it now, or "" to run it unprepared.
func (s *stmtSet) use(ctx context.Context, conn *pgx.Conn, query string, cfg PreparedConfig) (string, error) {
	if cfg.MaxPerConn < 0 {
		return "", nil
	}
	now := cfg.Now()
	if st, ok := s.stmts[query]; ok {
		st.lastUsed = now
		return st.name, nil
	}
	h := maphash.String(s.seed, query)
	if _, again := s.seen[h]; !again {
		if len(s.seen) >= seenMax {
			clear(s.seen)
		}
		s.seen[h] = struct{}{}
		return "", nil
	}
	if len(s.stmts) >= cfg.MaxPerConn && !s.evictIdle(ctx, conn, now.Add(-cfg.IdleAfter)) {
		return "", nil
	}
	s.next++
	name := "bizmsg_" + strconv.Itoa(s.next)
	if _, err := conn.Prepare(ctx, name, query); err != nil {
		return "", fmt.Errorf("prepare statement: %w", err)
	}
	delete(s.seen, h)
	s.stmts[query] = &stmt{name: name, lastUsed: now}
	return name, nil
}

// evictIdle deallocates the least recently used statement if it was last
// used before idleSince, and reports whether it did.
func (s *stmtSet) evictIdle(ctx context.Context, conn *pgx.Conn, idleSince time.Time) bool {
	var lru string
	var oldest *stmt
	for q, st := range s.stmts {
		if oldest == nil || st.lastUsed.Before(oldest.lastUsed) {
			lru, oldest = q, st
		}
	}
	if oldest == nil || !oldest.lastUsed.Before(idleSince) {
		return false
	}
	s.forget(ctx, conn, lru)
	return true
}

// reprepare forgets query's statement and counts the text as run once, so
// that its next run prepares it again.
func (s *stmtSet) reprepare(ctx context.Context, conn *pgx.Conn, query string) {
	s.forget(ctx, conn, query)
	s.seen[maphash.String(s.seed, query)] = struct{}{}
}

// forget deallocates query's statement on conn. A failed deallocation
// leaves the connection broken or the statement in place; either way the
// set no longer counts it, and pgx closes a broken connection.
func (s *stmtSet) forget(ctx context.Context, conn *pgx.Conn, query string) {
	st, ok := s.stmts[query]
	if !ok {
		return
	}
	delete(s.stmts, query)
	_ = conn.Deallocate(ctx, st.name)
}

// Named runs named query name of q, written for pgx with the tenant
// schema schema (sqlq's Pgx), with args: as Query hands its rows to scan,
// or as Exec when scan is nil.
func (p *Prepared) Named(ctx context.Context, tx pgx.Tx, q *sqlq.Queries, name, schema string, args sqlq.Args, scan func(Rows) error) error {
	text, vals, err := q.Pgx(name, schema, args)
	if err != nil {
		return err
	}
	if scan == nil {
		return p.Exec(ctx, tx, text, vals...)
	}
	return p.Query(ctx, tx, text, vals, scan)
}
