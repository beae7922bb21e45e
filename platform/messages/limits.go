package messages

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Limits are an organization's sending limits as central.organizations
// keeps them: the daily limit of its sender numbers without an override of
// their own, and its sender throttle (nil: the service's default).
type Limits struct {
	DefaultDailyLimit int
	SenderRate        *float64
	SenderBurst       *int
}

// RowQuerier runs a statement that reads one row: a pool or a transaction.
type RowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ReadLimits reads organization orgID's limits, in a statement of its own,
// for the tenant statements that need them (the delivery claim, a
// campaign's pool) to take as arguments: a statement of a tenant schema
// never joins central.organizations, because on Citus the schema is on a
// worker and central on the coordinator (docs/scaling.md).
func ReadLimits(ctx context.Context, q RowQuerier, orgID int64) (Limits, error) {
	var l Limits
	err := q.QueryRow(ctx, `SELECT default_daily_limit, sender_rate, sender_burst
		  FROM central.organizations WHERE id = $1`, orgID).Scan(&l.DefaultDailyLimit, &l.SenderRate, &l.SenderBurst)
	if err != nil {
		return Limits{}, fmt.Errorf("organization %d's limits: %w", orgID, err)
	}
	return l, nil
}
