package messages

import (
	"cmp"
	"context"
	"embed"
	"fmt"
	"slices"
	"strings"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/sqlq"
)

// Limits are an organization's sending limits as central.organizations
// keeps them: the daily limit of its sender numbers without an override of
// their own, and its sender throttle (nil: the service's default).
type Limits struct {
	DefaultDailyLimit int
	SenderRate        *float64
	SenderBurst       *int
}

// Counters runs the daily-limit statements that every stage of a message
// shares, each a named query of queries/ run in the caller's statement
// path: the organization's limits (ReadLimits) and the creation of the
// daily_usage counters a reservation found missing (Create). It is safe
// for concurrent use.
type Counters struct {
	q *sqlq.Queries
}

// NewCounters loads the statements of Counters.
func NewCounters() (*Counters, error) {
	q, err := loadQueries()
	if err != nil {
		return nil, err
	}
	return &Counters{q: q}, nil
}

// ReadLimits reads organization orgID's limits, in a statement of its own
// (queries/read_limits.sql), for the tenant statements that need them (the
// delivery claim, a campaign's pool) to take as arguments: a statement of
// a tenant schema never joins central.organizations, because on Citus the
// schema is on a worker and central on the coordinator (docs/scaling.md).
func (c *Counters) ReadLimits(ctx context.Context, q db.Querier, orgID int64) (Limits, error) {
	var l Limits
	if err := db.QueryRowNamed(ctx, q, c.q, "read_limits", "", sqlq.Args{"org_id": orgID}).Scan(&l.DefaultDailyLimit, &l.SenderRate, &l.SenderBurst); err != nil {
		return Limits{}, fmt.Errorf("organization %d's limits: %w", orgID, err)
	}
	return l, nil
}

// Create is the statement, and its arguments, that creates the daily_usage
// rows of side (SideAccept or SideDeliver) of tenant t that are missing, for
// senders sids[i] on days days[i] ('YYYY-MM-DD'), with nothing counted: a
// counter statement that found one missing (a reservation's, and the
// one-message statements) runs again after it. An existing row is left as
// it is. The rows are inserted in sender and day order, each pair once, so
// that concurrent creators lock them in one order. A multi-row VALUES
// (queries/create_counters_<side>.sql, by sqlq's PgxRows): Citus routes it
// to the tenant's node alone, where it sends an INSERT ... SELECT FROM
// unnest(...) of the arrays through the coordinator, in a two-phase commit
// (docs/scaling.md, §Two-phase commits); Citus 13.2 cannot run one that
// joins the arrays with the schema's tables on the node (it sends it a
// broken filter, "IS NOT NULL" of no column).
func (c *Counters) Create(t db.Tenant, side string, sids []int64, days []string) (string, []any, error) {
	type pair struct {
		sid int64
		day string
	}
	pairs := make([]pair, 0, len(sids))
	for i := range sids {
		pairs = append(pairs, pair{sids[i], days[i]})
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		return cmp.Or(cmp.Compare(a.sid, b.sid), strings.Compare(a.day, b.day))
	})
	pairs = slices.Compact(pairs)
	rows := make([]sqlq.Args, len(pairs))
	for i, p := range pairs {
		rows[i] = sqlq.Args{"sid": p.sid, "day": p.day}
	}
	var name string
	switch side {
	case SideAccept:
		name = "create_counters_accept"
	case SideDeliver:
		name = "create_counters_deliver"
	default:
		return "", nil, fmt.Errorf("messages: no daily_usage side %q", side)
	}
	query, args, err := c.q.PgxRows(name, t.Quoted(), rows)
	if err != nil {
		return "", nil, fmt.Errorf("create %d daily counters: %w", len(pairs), err)
	}
	return query, args, nil
}

// The sides of daily_usage whose counters a reservation finds missing
// (Counters.Create): acceptance's (used) and delivery's (dispatched).
const (
	SideAccept  = "accept"
	SideDeliver = "deliver"
)

// ColumnsFragment returns Columns as the fragment message_columns
// (queries/fragments/message_columns.sql), for a named query of another
// package that reads message rows (sqlq.Load's extra, ?{message_columns}).
func ColumnsFragment() (sqlq.Fragment, error) {
	f, err := sqlq.ReadFragment(queries, "queries/"+sqlq.FragmentDir+"/message_columns"+sqlq.Ext)
	if err != nil {
		return sqlq.Fragment{}, fmt.Errorf("messages: %w", err)
	}
	return f, nil
}

//go:embed queries/*.sql queries/fragments/*.sql
var queries embed.FS

// loadQueries loads the named queries of queries/.
func loadQueries() (*sqlq.Queries, error) {
	q, err := sqlq.Load(queries, "queries")
	if err != nil {
		return nil, fmt.Errorf("messages: %w", err)
	}
	return q, nil
}
