package consent

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
)

// The opt-out rule's lock (docs/design.md, §Consent). Its key is the tenant
// schema's name's and the phone's hashes, the key the tenant schema's
// functions of migration 0013 (opted_out, lock_opt_out) take: their schema
// key is hashtext(current_schema()) as the migration ran, the schema's name.
// The statements call only built-in functions and name no table, so on
// Citus the coordinator runs them, for every transaction of the tenant
// (docs/scaling.md, §Run on Citus), and a statement that reads the
// tenant's tables calls no function of the schema, which Citus refused for
// a moment after a schema move.
const (
	// ShareLockSQL takes the opt-out locks of the phones $2 (text[], each
	// once) of tenant schema $1 in share mode, for the transaction.
	ShareLockSQL = `SELECT pg_advisory_xact_lock_shared(hashtext($1::text), hashtext(p)) FROM unnest($2::text[]) AS p`
	// lockSQL takes phone $2's opt-out lock of tenant schema $1 exclusively,
	// for the transaction.
	lockSQL = `SELECT pg_advisory_xact_lock(hashtext($1::text), hashtext($2::text))`
)

// SharePhones is the argument of ShareLockSQL for the recipients' phones:
// each once, sorted.
func SharePhones(phones ...string) []string {
	out := slices.Clone(phones)
	slices.Sort(out)
	return slices.Compact(out)
}

// lock takes phone p's opt-out lock of tenant t exclusively for tx
// (lockSQL): a change of a phone's opt-out waits for the sends holding the
// lock in share mode (past their check) to commit, and the sends after it
// wait for its commit, then read it.
func lock(ctx context.Context, tx pgx.Tx, t db.Tenant, p string) error {
	if _, err := tx.Exec(ctx, lockSQL, t.Schema, p); err != nil {
		return fmt.Errorf("lock opt-out of a phone: %w", err)
	}
	return nil
}
