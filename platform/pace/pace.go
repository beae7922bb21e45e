// Package pace keeps rates that hold across processes: the generic cell rate
// algorithm (GCRA) over one row per rate-limited thing in Postgres
// (central.pace), shared by every api and worker process on the database.
//
// A rate r with burst b is an emission interval T = 1/r and a tolerance
// τ = b·T. Each thing has a theoretical arrival time (tat): the time its
// bucket would be full again. An event at time now moves it to
// max(tat, now) + T; the event is due at that new tat − τ. A bucket is full
// when tat ≤ now, so b events are due at once and each later one T after the
// one before: the token bucket's behaviour, with one timestamp and one
// statement per event instead of a process's memory. Time is the database's
// (statement_timestamp()), so processes with skewed clocks agree.
//
// Two kinds of event:
//   - Take (the delivery throttle) always takes the next slot, even one due
//     in the future, and says how long until it is due. A caller that waits
//     for it elsewhere (a snoozed job) names a ticket: its next Take finds
//     the reserved slot under the ticket instead of taking another.
//   - Allow (the API's request rate) takes the slot only when it is due now,
//     else refuses and says when it will be.
//
// A process decides the events that arrive while its earlier ones are being
// decided together, in one statement (platform/batch).
//
// The table is UNLOGGED: no WAL and no commit flush per event, and after a
// crash of the database server every bucket starts full (docs/design.md,
// §Rates across processes).
package pace

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bizmsg/platform/platform/batch"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/sqlq"
)

// queries are the package's named queries (platform/sqlq), and its
// fragment allow_step (AllowStep). Every statement runs on pgx, prepared:
// the decisions are on the hot path (every delivery's throttle, every
// Tenant API request's rate).
//
//go:embed queries/*.sql queries/fragments/*.sql
var queries embed.FS

// Limit is a rate: Rate events a second, at most Burst at once.
type Limit struct {
	Rate  float64
	Burst int
}

// Validate reports whether l describes a usable rate.
func (l Limit) Validate() error {
	if !(l.Rate > 0) || math.IsInf(l.Rate, 0) {
		return fmt.Errorf("pace: rate must be a positive number, got %v", l.Rate)
	}
	if l.Burst < 1 {
		return fmt.Errorf("pace: burst must be at least 1, got %d", l.Burst)
	}
	return nil
}

// interval is T, the time between two events at the full rate, in seconds.
func (l Limit) interval() float64 { return 1 / l.Rate }

// tolerance is τ = Burst·T, in seconds: how far ahead of now tat may run.
func (l Limit) tolerance() float64 { return float64(l.Burst) / l.Rate }

// Config configures a Store.
type Config struct {
	// Pool is the central database the buckets are kept in. Required.
	Pool *pgxpool.Pool
	// TicketTTL is how long a reserved slot stays under its ticket after it
	// falls due, for the job that reserved it to come back (a snoozed job may
	// run a little late). Default 1 minute.
	TicketTTL time.Duration
	// SweepInterval is how often a process deletes full buckets and
	// forgotten tickets, so the table holds only what is busy. Default 1
	// minute.
	SweepInterval time.Duration
	// Now is the process's clock, used only to decide when to sweep. Default
	// time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	defaults.Positive(&c.TicketTTL, time.Minute)
	defaults.Positive(&c.SweepInterval, time.Minute)
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Store is the shared rate state, in central.pace and central.pace_tickets.
// It is safe for concurrent use. The events of a process that arrive while
// its earlier ones are being decided are decided together, in one statement
// (platform/batch), as API keys are read: a busy process pays one round
// trip per batch, not per event, and an event alone runs at once.
type Store struct {
	pool  *pgxpool.Pool
	q     *sqlq.Queries
	cfg   Config
	takes *batch.Batcher[struct{}, takeItem, time.Duration]
	allow *batch.Batcher[struct{}, allowItem, Decision]

	mu        sync.Mutex
	lastSweep time.Time
}

// New validates cfg and returns a Store.
func New(cfg Config) (*Store, error) {
	if cfg.Pool == nil {
		return nil, errors.New("pace: Config.Pool is required")
	}
	cfg.setDefaults()
	q, err := sqlq.Load(queries, "queries")
	if err != nil {
		return nil, fmt.Errorf("pace: %w", err)
	}
	s := &Store{pool: cfg.Pool, q: q, cfg: cfg, lastSweep: cfg.Now()}
	s.takes = batch.New(s.takeMany, batch.Config{MaxInFlight: batch.ReadMaxInFlight})
	s.allow = batch.New(s.allowMany, batch.Config{MaxInFlight: batch.ReadMaxInFlight})
	return s, nil
}

// takeItem is one Take waiting for its batch.
type takeItem struct {
	key, ticket string
	l           Limit
}

// Take takes the next slot of key under l on behalf of ticket and returns
// how long until it is due; zero means now. Taking again with a ticket whose
// slot is still kept returns the time left until that slot (zero once due,
// when it is used up) and takes nothing. An empty ticket keeps nothing.
func (s *Store) Take(ctx context.Context, key, ticket string, l Limit) (time.Duration, error) {
	ds, errs := s.TakeAll(ctx, []Slot{{Key: key, Ticket: ticket, Limit: l}})
	return ds[0], errs[0]
}

// Slot is one Take of TakeAll: the next slot of Key under Limit, on behalf
// of Ticket.
type Slot struct {
	Key, Ticket string
	Limit       Limit
}

// TakeAll is Take for each of slots, queued together so that they share a
// statement (up to 64; a delivery batch's tokens are one), with each one's
// delay and error in order.
func (s *Store) TakeAll(ctx context.Context, slots []Slot) ([]time.Duration, []error) {
	out, errs := make([]time.Duration, len(slots)), make([]error, len(slots))
	items := make([]takeItem, 0, len(slots))
	at := make([]int, 0, len(slots))
	for i, sl := range slots {
		if err := sl.valid(); err != nil {
			errs[i] = err
			continue
		}
		items, at = append(items, takeItem{key: sl.Key, ticket: sl.Ticket, l: sl.Limit}), append(at, i)
	}
	if len(items) == 0 {
		return out, errs
	}
	s.SweepDue(ctx)
	ds, es := s.takes.DoAll(ctx, struct{}{}, items)
	for j, i := range at {
		out[i], errs[i] = ds[j], es[j]
	}
	return out, errs
}

// valid reports whether sl can be taken: a key, and a usable limit.
func (sl Slot) valid() error {
	if sl.Key == "" {
		return errors.New("pace: empty key")
	}
	return sl.Limit.Validate()
}

// takeMany runs the query take (queries/take.sql) for a batch of Takes. Items with the same non-empty
// ticket (a rescued job beside its original) share the first one's slot; the
// items of one key all use the first one's limit.
func (s *Store) takeMany(ctx context.Context, _ struct{}, items []takeItem) ([]time.Duration, error) {
	first := make(map[string]int, len(items)) // ticket → the item that runs it
	limits := make(map[string]Limit, len(items))
	same := make([]int, len(items)) // the index of the item whose result each shares
	var keys, tickets []string
	var ts, taus []float64
	var sent []int // the items sent, by their ordinal - 1
	for i, it := range items {
		same[i] = i
		if it.ticket != "" {
			if j, ok := first[it.ticket]; ok {
				same[i] = j
				continue
			}
			first[it.ticket] = i
		}
		l, ok := limits[it.key]
		if !ok {
			l = it.l
			limits[it.key] = l
		}
		keys, tickets = append(keys, it.key), append(tickets, it.ticket)
		ts, taus = append(ts, l.interval()), append(taus, l.tolerance())
		sent = append(sent, i)
	}
	out := make([]time.Duration, len(items))
	rows, err := s.query(ctx, "take", sqlq.Args{"keys": keys, "tickets": tickets, "t": ts, "tau": taus})
	if err != nil {
		return nil, fmt.Errorf("pace: take: %w", err)
	}
	got := 0
	for rows.Next() {
		var ord int
		var secs float64
		if err := rows.Scan(&ord, &secs); err != nil {
			rows.Close()
			return nil, fmt.Errorf("pace: take: %w", err)
		}
		out[sent[ord-1]] = seconds(secs)
		got++
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pace: take: %w", err)
	}
	if got != len(sent) {
		return nil, fmt.Errorf("pace: take: %d slots for %d events", got, len(sent))
	}
	for i := range out {
		out[i] = out[same[i]]
	}
	return out, nil
}

// Decision is what Allow decided.
type Decision struct {
	// Allowed tells whether the event took a slot.
	Allowed bool
	// Ahead is how far the key's tat is ahead of now after the decision: the
	// time until its bucket is full again.
	Ahead time.Duration
	// RetryAfter is, when refused, the time until the next slot is due.
	RetryAfter time.Duration
	// Remaining is how many more events are due now.
	Remaining int
}

// allowItem is one Allow waiting for its batch.
type allowItem struct {
	key string
	l   Limit
}

// Allow takes a slot of key under l if one is due now, else refuses and says
// when one will be. The decision is exact across processes: it is made under
// the key's row lock.
func (s *Store) Allow(ctx context.Context, key string, l Limit) (Decision, error) {
	if err := l.Validate(); err != nil {
		return Decision{}, err
	}
	s.SweepDue(ctx)
	return s.allow.Do(ctx, struct{}{}, allowItem{key: key, l: l})
}

// AllowStep returns the decision of Allow as steps of a WITH clause, the
// fragment allow_step (queries/fragments/allow_step.sql), for a statement
// that decides request rates beside other work of its own (platform/keys
// finds API keys and decides their rates in one round trip) and includes
// it (sqlq.Load's extra, ?{allow_step}). It reads a relation pace_v(key
// text, t float8, tau float8, n int): each key with its interval T and
// tolerance τ in seconds and its number of events; the statement defines
// pace_v before it. It ends with pace_out(key, from_s, to_s), what Decide
// takes. A missing row is a full bucket; the upsert decides under each
// row's lock, rows in key order (so concurrent statements cannot
// deadlock), how many of a key's events fit before max(tat, now) + k·T
// passes now + τ (at most all of them), and returns where the key's slots
// started (prev, the tat it found; none for a new row: now) and where they
// end (the new tat), in seconds from now.
func AllowStep() (sqlq.Fragment, error) {
	f, err := sqlq.ReadFragment(queries, "queries/"+sqlq.FragmentDir+"/allow_step"+sqlq.Ext)
	if err != nil {
		return sqlq.Fragment{}, fmt.Errorf("pace: %w", err)
	}
	return f, nil
}

// Decide is the decision of the event numbered idx (from 1, in arrival
// order) of a key under l, from the key's from and to of AllowStep: the
// first k = (to − from)/T events are allowed, each one slot further, and
// the rest refused until the slot after the last.
func Decide(l Limit, idx int, from, to float64) Decision {
	t, tau := l.interval(), l.tolerance()
	if idx <= int(math.Round((to-from)/t)) {
		ahead := from + float64(idx)*t
		return Decision{Allowed: true, Ahead: seconds(ahead),
			Remaining: max(int(math.Floor((tau-ahead)/t+1e-9)), 0)}
	}
	return Decision{Ahead: seconds(to), RetryAfter: seconds(to + t - tau)}
}

// allowMany runs the query allow (queries/allow.sql, AllowStep) for a
// batch of Allows. The events of one key all
// use the first one's limit.
func (s *Store) allowMany(ctx context.Context, _ struct{}, items []allowItem) ([]Decision, error) {
	byKey := make(map[string][]int, len(items))
	var keys []string
	var ts, taus []float64
	for i, it := range items {
		if _, ok := byKey[it.key]; !ok {
			keys = append(keys, it.key)
			ts, taus = append(ts, it.l.interval()), append(taus, it.l.tolerance())
		}
		byKey[it.key] = append(byKey[it.key], i)
	}
	ns := make([]int32, len(keys))
	for j, k := range keys {
		ns[j] = int32(len(byKey[k]))
	}
	out := make([]Decision, len(items))
	rows, err := s.query(ctx, "allow", sqlq.Args{"keys": keys, "t": ts, "tau": taus, "n": ns})
	if err != nil {
		return nil, fmt.Errorf("pace: allow: %w", err)
	}
	got := 0
	for rows.Next() {
		var key string
		var from, to float64
		if err := rows.Scan(&key, &from, &to); err != nil {
			rows.Close()
			return nil, fmt.Errorf("pace: allow: %w", err)
		}
		idx := byKey[key]
		l := items[idx[0]].l
		for n, i := range idx {
			out[i] = Decide(l, n+1, from, to)
		}
		got++
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pace: allow: %w", err)
	}
	if got != len(keys) {
		return nil, fmt.Errorf("pace: allow: %d decisions for %d keys", got, len(keys))
	}
	return out, nil
}

// seconds converts a number of seconds into a Duration, zero when negative.
func seconds(s float64) time.Duration {
	if !(s > 0) {
		return 0
	}
	return time.Duration(math.Ceil(s * float64(time.Second)))
}

// SweepDue sweeps (Sweep) when SweepInterval has passed since this
// process's last sweep: what Take and Allow call, and a statement that
// decides rates through AllowStep calls instead. A failed sweep is retried
// at the next interval: it only keeps rows that change nothing.
func (s *Store) SweepDue(ctx context.Context) {
	now := s.cfg.Now()
	s.mu.Lock()
	if now.Sub(s.lastSweep) < s.cfg.SweepInterval {
		s.mu.Unlock()
		return
	}
	s.lastSweep = now
	s.mu.Unlock()
	_ = s.Sweep(ctx)
}

// Sweep deletes the buckets that are full again (a missing row is a full
// bucket, so this changes no decision) and the tickets whose slot fell due
// more than TicketTTL ago.
func (s *Store) Sweep(ctx context.Context) error {
	if err := s.exec(ctx, "sweep_buckets", nil); err != nil {
		return fmt.Errorf("pace: sweep buckets: %w", err)
	}
	if err := s.exec(ctx, "sweep_tickets", sqlq.Args{"ttl": s.cfg.TicketTTL.Seconds()}); err != nil {
		return fmt.Errorf("pace: sweep tickets: %w", err)
	}
	return nil
}

// Len reports how many buckets and tickets the table holds, for tests and
// operators.
func (s *Store) Len(ctx context.Context) (buckets, tickets int, err error) {
	if err = db.QueryRowNamed(ctx, s.pool, s.q, "count", "", nil).Scan(&buckets, &tickets); err != nil {
		return 0, 0, fmt.Errorf("pace: count: %w", err)
	}
	return buckets, tickets, nil
}

// query runs named query name with args on the pool (db.QueryNamed): pgx
// keeps the statement prepared per connection, as it does every statement
// of the Store.
func (s *Store) query(ctx context.Context, name string, args sqlq.Args) (pgx.Rows, error) {
	return db.QueryNamed(ctx, s.pool, s.q, name, "", args)
}

// exec is query for a statement that returns no rows.
func (s *Store) exec(ctx context.Context, name string, args sqlq.Args) error {
	_, err := db.ExecNamed(ctx, s.pool, s.q, name, "", args)
	return err
}
