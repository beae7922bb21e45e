package delivery

// The statements of delivery are named queries (platform/sqlq), each in
// queries/ with its one-message and its batch form side by side, and the
// pieces they share in queries/fragments. The rules of a delivery and where
// each is enforced:
//
//	rule                                   statement step
//	one job delivers a message at a time    claim_one / claim_many (locked_messages: rows locked in id order; held)
//	a conversation's messages go in order   claim_one / claim_many (blocker: an earlier one still queued)
//	the daily limit, as it is now            claim_one / claim_many (the 'deliver' counter, claim_reserve: c, u), claimLocked
//	a conversation's next message           next (after each record, for the job that carries on)
//	the sent record and its counters        mark_one_sent / mark_sent (sent_set, sent_counters), and their _rows forms
//
// The acceptance's rules are enforced by package acceptance's statements.
// Each is written for pgx by sqlq's Pgx (the tenant's quoted schema in the
// text, every other ?name a parameter $n) and runs through db.Prepared, so
// each tenant has texts of its own, prepared per connection as before;
// Requeue's runs in its caller's pgx transaction. Which variant runs (one
// message or a batch, with the changed rows or without) is chosen in Go, by
// the query's name.
//
// What the statements' steps mean:
//
//   - blocker is the message that message m waits for, if any: the nearest
//     earlier message of its conversation (the same sender number and
//     recipient) that is still queued and not failing for longer than the
//     order window (its failing_since after since: the claim's time less
//     Config.OrderWindow). A queued message is queued however far its
//     delivery went (waiting for its job or its token, in flight, or
//     between retries after a transient failure), so m waits until that
//     message's sent or failed record commits, or until its delivery has
//     been failing for the window. It reads
//     messages_queued_conversation_idx backwards from m's id, one probe in
//     the usual case; failing_since only filters what it finds. The claims
//     read it as a scalar subquery, not a LATERAL join: Citus 13.2 cannot
//     run a LATERAL join with LIMIT in a FOR UPDATE CTE that feeds an
//     INSERT (it reads the CTE's binary intermediate result as text:
//     "invalid input syntax for type bigint: \"PGCOPY\"", docs/scaling.md).
//   - held is whether message m is held by the claim of a delivery job
//     other than its claimant: claimed by it less than lease seconds ago
//     (Config.ClaimLease), on the database's clock, which every process
//     shares (a claim stamps claimed_at with it). One job at a time
//     delivers a message; a claim lapses after the lease, the longest a
//     live job's run holds it, so that a job killed mid-delivery is taken
//     over. locked_messages looks each message's claimant up in jobs by
//     its position in ids, not by a join with unnest: Citus 13.2 cannot run
//     such a join in a FOR UPDATE CTE that feeds an INSERT.
//   - A claim's SET list counts a message dispatched once, at its first
//     claim, and holds it for its job from now on the database's clock.
//   - claim_one is claim_many for one message: the same result, from a
//     statement that costs Postgres half as much to plan as the batch
//     statement (0.41 against 0.79 ms, pg_stat_statements over a 100-tenant
//     bench run; a batch of one is what a worker runs when its jobs belong
//     to many tenants), and nothing once prepared. One counter row, so no
//     order to keep. The counter goes up by an UPDATE (u), so that Citus
//     runs the statement on the tenant's node alone (as claim_reserve's
//     fragment says); when the sender's 'deliver'
//     counter for the day is missing (c: a day's first claim), the message
//     is not claimed and the result says so (missing): the claim creates
//     the counter (messages.Counters.Create) and runs again.
//   - claim_many reads a message that waits for a blocker, or that another
//     job's claim holds, and does not claim it. Its last column, missing,
//     is whether a sender's 'deliver' counter for a day was missing: then
//     no counter went up, and the claim creates the missing ones and runs
//     again.
//   - recordable (a sent record's) is whether message x may take the
//     record: it is queued, or a receipt moved it on (delivered, read or
//     failed) before the record (it gets the network's ids). It is a CASE,
//     not the equivalent OR of status comparisons, so that it can only
//     filter the rows the ids find and never be the index condition the
//     plan starts from. With the OR, a plan made after an ANALYZE that saw
//     almost nothing queued (the usual state of a tenant whose messages are
//     delivered as they come) scans every queued message through
//     messages_status_idx and joins the batch's ids to them: 80 ms and more
//     per batch under a backlog of 10,000, which took the delivery drain
//     from 3,300 to 1,000-1,300 messages/s once autovacuum ran
//     (docs/design.md, §Delivery plans start from the ids).
//     TestDeliveryPlansStartFromIDs holds it.
//   - sent_set: queued becomes sent, or delivered when the network confirms
//     the delivery, and a status a receipt set stays; delivered_at is the
//     delivery's time when the network confirms it, unless a receipt set it
//     first.
//   - sent_counters: the delivery-side counters of each sender's day go up
//     by its messages that were queued, in sent or in delivered, locked in
//     sender and day order (l).
//   - mark_one_sent is mark_sent for one message: the same effect, from a
//     statement that costs Postgres half as much to plan (0.21 against
//     0.41 ms), and nothing once prepared. The _rows forms return the
//     changed messages (messages.ChangedColumns) for their events; the
//     others return what the counters need and end with the counters'
//     update.

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/sqlq"
)

// queries are the package's named queries.
//
//go:embed queries/*.sql queries/fragments/*.sql
var queries embed.FS

// loadQueries reads the package's named queries.
func loadQueries() (*sqlq.Queries, error) {
	cols, err := messages.ColumnsFragment()
	if err != nil {
		return nil, fmt.Errorf("delivery: %w", err)
	}
	q, err := sqlq.Load(queries, "queries", cols)
	if err != nil {
		return nil, fmt.Errorf("delivery: %w", err)
	}
	return q, nil
}

// query runs named query name for tenant t with args through db.Prepared
// (in tx, or on the pool when tx is nil) and hands its rows to scan; with
// a nil scan it discards them.
func (s *Service) query(ctx context.Context, tx pgx.Tx, t db.Tenant, name string, args sqlq.Args, scan func(db.Rows) error) error {
	return s.prep.Named(ctx, tx, s.q, name, t.Quoted(), args, scan)
}
