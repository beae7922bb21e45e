package consent

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/sqlq"
)

// The opt-out rule's lock (docs/design.md, §Consent). Its key is the tenant
// schema's name's and the phone's hashes, the key the tenant schema's
// functions of migration 0013 (opted_out, lock_opt_out) take: their schema
// key is hashtext(current_schema()) as the migration ran, the schema's name.
// The statements (queries/share_lock.sql, queries/lock.sql) call only
// built-in functions and name no table, so on Citus the coordinator runs
// them, for every transaction of the tenant (docs/scaling.md, §Run on
// Citus), and a statement that reads the tenant's tables calls no function
// of the schema, which Citus refused for a moment after a schema move. They
// take the schema's name as an argument, so their text is every tenant's
// and one prepared statement serves them all.

// ShareLocker takes the opt-out locks of a tenant's phones in share mode,
// for a transaction of another package (acceptance's, before its
// statement that reads the list): the statement of queries/share_lock.sql
// as pgx runs it (sqlq.Queries.Pgx), so that it stays prepared
// (db.Prepared).
type ShareLocker struct {
	q *sqlq.Queries
}

// LoadShareLocker reads ShareLocker's statement from the package's named
// queries.
func LoadShareLocker() (ShareLocker, error) {
	q, err := loadQueries()
	if err != nil {
		return ShareLocker{}, err
	}
	return ShareLocker{q: q}, nil
}

// Statement returns the statement that takes the opt-out locks of phones
// (SharePhones: each once, sorted) of tenant t in share mode for the
// transaction that runs it, and its arguments.
func (l ShareLocker) Statement(t db.Tenant, phones ...string) (string, []any, error) {
	if l.q == nil {
		return "", nil, errors.New("consent: a ShareLocker not loaded (LoadShareLocker)")
	}
	return l.q.Pgx("share_lock", "", sqlq.Args{"schema_name": t.Schema, "phones": SharePhones(phones...)})
}

// SharePhones is the argument of the share lock for the recipients'
// phones: each once, sorted.
func SharePhones(phones ...string) []string {
	out := slices.Clone(phones)
	slices.Sort(out)
	return slices.Compact(out)
}

// lock takes phone p's opt-out lock of tenant t exclusively for tx
// (queries/lock.sql): a change of a phone's opt-out waits for the sends
// holding the lock in share mode (past their check) to commit, and the
// sends after it wait for its commit, then read it.
func (s *Service) lock(ctx context.Context, tx pgx.Tx, t db.Tenant, p string) error {
	if err := s.exec(ctx, tx, t, "lock", sqlq.Args{"schema_name": t.Schema, "phone": p}); err != nil {
		return fmt.Errorf("lock opt-out of a phone: %w", err)
	}
	return nil
}
