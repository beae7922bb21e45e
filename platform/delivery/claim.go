package delivery

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/pace"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/sqlq"

	"github.com/bizmsg/platform/platform/messages"
)

// claim is what claimMany or claimLocked decided for a message: proceed
// (deliver m from the sender's phone, under the sender's throttle limit),
// wait for an earlier message of its conversation (blocker, the id of that
// message: m is left unclaimed), wait for another job's claim (held), or
// none of these (it is sent or failed already, or it was failed now).
type claim struct {
	proceed bool
	blocker int64
	held    bool
	m       *messages.Row
	phone   string
	limit   pace.Limit
}

// waits records in c whether the queued message of r waits, for an earlier
// message of its conversation or for another job's claim, and reports it.
func (c *claim) waits(r *claimRow) bool {
	switch {
	case r.Blocker != nil:
		c.blocker = *r.Blocker
	case r.Held:
		c.held = true
	default:
		return false
	}
	return true
}

// claimMany is the common case of the claim, for all of ids at once (jobs
// the claiming job of each, in the same order, org the organization's
// limits), in one statement (one round trip, no explicit transaction): it
// locks the messages (by id) and reads them with their senders, the earlier
// message of each one's conversation that it waits for (blocker) and
// whether another job's claim holds it (held, statements.go); it locks the
// delivery-side day counters of the senders whose queued, not yet
// dispatched messages that wait for nothing all fit under their current
// limits (in sender and day order, creating a counter a day's first claim
// finds missing) and counts those messages in them; it stamps every message
// it claims (those, and the dispatched ones that wait for nothing)
// dispatched and claimed by its job.
//
// It returns every message found, as read before the claim, with whether it
// proceeds. The queued ones it could not claim are undecided (a sender no
// longer active, or a limit lowered since acceptance that not all of a
// sender's messages fit under): claimLocked decides those one by one. A
// message that does not exist is absent from both.
func (s *Service) claimMany(ctx context.Context, t db.Tenant, org messages.Limits, ids, jobs []int64) (map[int64]claim, []int64, error) {
	rows, err := s.claimRows(ctx, t, org, ids, jobs)
	if err != nil {
		return nil, nil, fmt.Errorf("claim messages of %s: %w", t.Schema, err)
	}
	out := make(map[int64]claim, len(rows))
	var undecided []int64
	for i := range rows {
		r := &rows[i]
		c := claim{m: &r.Row, phone: r.SenderPhone, limit: s.limitOf(org)}
		switch {
		case r.Status != messages.StatusQueued:
		case c.waits(r):
		case r.Claimed:
			c.proceed = true
		default:
			undecided = append(undecided, r.ID)
			continue
		}
		out[r.ID] = c
	}
	return out, undecided, nil
}

// claimRow is a message as the claim reads it: with its sender, the
// earlier message of its conversation it waits
// for (blocker; nil when none), whether another job's claim holds it,
// the job claiming it, and whether this claim claimed it.
type claimRow struct {
	messages.Row
	deliveryJoin
	Blocker  *int64
	Held     bool
	Claimant int64
	Claimed  bool
	// Missing is whether the claim found a sender's 'deliver' counter
	// for a day missing (it then raised none).
	Missing bool
}

// lockedDest is the destinations of locked_messages' columns, in order.
func (c *claimRow) lockedDest() []any {
	return append(c.deliveryDest(), &c.Blocker, &c.Held, &c.Claimant)
}

// claimRows runs claimMany's statement, prepared (db.Prepared): claim_one
// for one message, claim_many for several. When a sender's counter for
// a day was missing (a day's first claim), it creates the missing counters
// of the messages read (messages.Counters.Create) and runs the statement
// again, once.
func (s *Service) claimRows(ctx context.Context, t db.Tenant, org messages.Limits, ids, jobs []int64) ([]claimRow, error) {
	query, idName, idArg, jobName, jobArg := "claim_many", "ids", any(ids), "jobs", any(jobs)
	if len(ids) == 1 {
		query, idName, idArg, jobName, jobArg = "claim_one", "id", ids[0], "job", jobs[0]
	}
	for try := 0; ; try++ {
		now := s.clock.Now()
		var rows []claimRow
		missing := false
		err := s.query(ctx, nil, t, query,
			sqlq.Args{"default_limit": org.DefaultDailyLimit, idName: idArg, "now": now,
				"since": now.Add(-s.cfg.OrderWindow), jobName: jobArg, "lease": s.cfg.ClaimLease.Seconds()},
			func(r db.Rows) error {
				for r.Next() {
					var c claimRow
					if err := r.Scan(append(c.lockedDest(), &c.Claimed, &c.Missing)...); err != nil {
						return err
					}
					missing = missing || c.Missing
					rows = append(rows, c)
				}
				return nil
			})
		if err != nil || !missing {
			return rows, err
		}
		if try > 0 {
			return nil, errors.New("daily counters missing after their creation")
		}
		var sids []int64
		var days []string
		for i := range rows {
			if r := &rows[i]; r.Status == messages.StatusQueued && r.DispatchedAt == nil {
				sids, days = append(sids, r.SenderNumberID), append(days, messages.Day(r.CreatedAt))
			}
		}
		if len(sids) == 0 {
			continue // nothing to create: the next try reports it
		}
		q, args, err := s.counters.Create(t, messages.SideDeliver, sids, days)
		if err != nil {
			return nil, err
		}
		if err := s.prep.Exec(ctx, nil, q, args...); err != nil {
			return nil, fmt.Errorf("create %d daily counters: %w", len(sids), err)
		}
	}
}

// usageKey names a sender's daily_usage row.
type usageKey struct {
	sender int64
	day    string // YYYY-MM-DD, the UTC day the message was accepted
}

// claimLocked reads messages ids of tenant t (jobs the claiming job of
// each, in the same order) with their senders, their blockers and other
// jobs' claims, and decides each under the lock of one transaction, under
// the organization's limits org (the messages claimMany could not claim):
//
//   - a message no longer queued is done (a job run twice, or after a
//     crash, changes nothing);
//   - a message that waits for an earlier one of its conversation still
//     queued waits, unclaimed, and so does one another job's claim holds;
//   - a message dispatched already (a retry after a transient network
//     failure) proceeds without a second count;
//   - a message whose sender is not active (suspended, rejected since
//     acceptance) fails with sender_not_active;
//   - otherwise the message claims its place in its acceptance day's
//     dispatched counter while that counter is under the sender's current
//     daily limit, in id order; past the limit (lowered since acceptance)
//     it fails with daily_limit_exceeded.
//
// Every message that proceeds is stamped dispatched and claimed by its job.
// The decision comes after the throttle's previous token, so that it sees
// the limit as late as possible. Locks are taken in one order, messages by
// id and then counters by sender and day, the order markSent also follows
// (receipts lock one counter each; acceptance locks only the
// acceptance-side rows, which no delivery statement touches), so that
// concurrent batches cannot deadlock. A message that does not exist is
// absent from the result.
func (s *Service) claimLocked(ctx context.Context, t db.Tenant, org messages.Limits, ids, jobs []int64) (map[int64]claim, error) {
	var out map[int64]claim
	err := s.prep.Tx(ctx, func(tx pgx.Tx) error {
		out = make(map[int64]claim, len(ids))
		now := s.clock.Now()
		var rows []claimRow
		err := s.query(ctx, tx, t, "lock_messages",
			sqlq.Args{"ids": ids, "jobs": jobs, "since": now.Add(-s.cfg.OrderWindow), "lease": s.cfg.ClaimLease.Seconds()},
			func(r db.Rows) error {
				for r.Next() {
					var c claimRow
					if err := r.Scan(c.lockedDest()...); err != nil {
						return err
					}
					rows = append(rows, c)
				}
				return nil
			})
		if err != nil {
			return fmt.Errorf("lock messages: %w", err)
		}
		var sids []int64
		var days []string
		want := make(map[usageKey]int)
		for i := range rows {
			r := &rows[i]
			if r.Status == messages.StatusQueued && r.Blocker == nil && !r.Held && r.DispatchedAt == nil && r.SenderStatus == senders.StatusActive {
				k := usageKey{r.SenderNumberID, messages.Day(r.CreatedAt)}
				if _, seen := want[k]; !seen {
					want[k] = 0
					sids, days = append(sids, k.sender), append(days, k.day)
				}
			}
		}
		count, err := s.lockUsage(ctx, tx, t, sids, days)
		if err != nil {
			return err
		}

		var claimed, claimants []int64
		for i := range rows {
			r := &rows[i]
			sn := r.sender()
			c := claim{m: &r.Row, phone: sn.phone, limit: s.limitOf(org)}
			k := usageKey{r.SenderNumberID, messages.Day(r.CreatedAt)}
			n, counted := count[k]
			switch {
			case r.Status != messages.StatusQueued:
			case c.waits(r):
			case r.DispatchedAt != nil:
				c.proceed = true
			case sn.status != senders.StatusActive:
				err = s.fail(ctx, tx, t, r.ID, messages.CodeSenderNotActive,
					fmt.Sprintf("The sender number became %s before the message was delivered.", sn.status))
			case !counted || n >= sn.dailyLimit(org):
				err = s.fail(ctx, tx, t, r.ID, messages.CodeDailyLimitExceeded,
					fmt.Sprintf("The sender number's daily limit (now %d) was reached before the message was delivered.", sn.dailyLimit(org)))
			default:
				count[k] = n + 1
				want[k]++
				c.proceed = true
			}
			if err != nil {
				return err
			}
			if c.proceed {
				claimed, claimants = append(claimed, r.ID), append(claimants, r.Claimant)
			}
			out[r.ID] = c
		}
		if len(claimed) == 0 {
			return nil
		}
		var ns []int32
		sids, days = sids[:0], days[:0]
		for k, n := range want {
			if n > 0 {
				sids, days, ns = append(sids, k.sender), append(days, k.day), append(ns, int32(count[k]))
			}
		}
		err = s.query(ctx, tx, t, "claim_locked", sqlq.Args{"senders": sids, "days": days, "counts": ns,
			"now": now, "ids": claimed, "jobs": claimants}, nil)
		if err != nil {
			return fmt.Errorf("claim daily limits: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim messages of %s: %w", t.Schema, err)
	}
	return out, nil
}

// lockUsage locks the delivery-side daily_usage rows of (sids[i], days[i])
// in sender and day order, creating the missing ones (nothing dispatched
// yet), and returns their dispatched counters. One statement, so that
// creating and locking follow that one order (an update that changes nothing
// is what locks an existing row in an upsert). On Citus the coordinator
// reads the arrays and copies the rows to the tenant's node alone, which
// runs the upsert (messages.Counters.Create says why not otherwise).
func (s *Service) lockUsage(ctx context.Context, tx pgx.Tx, t db.Tenant, sids []int64, days []string) (map[usageKey]int, error) {
	count := make(map[usageKey]int, len(sids))
	if len(sids) == 0 {
		return count, nil
	}
	err := s.query(ctx, tx, t, "lock_usage", sqlq.Args{"senders": sids, "days": days}, func(r db.Rows) error {
		for r.Next() {
			var k usageKey
			var n int
			if err := r.Scan(&k.sender, &k.day, &n); err != nil {
				return err
			}
			count[k] = n
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lock daily usage: %w", err)
	}
	return count, nil
}

// senderState is the sender as delivery sees it.
type senderState struct {
	phone    string
	status   senders.Status
	override *int
}

// dailyLimit is the sender's override, else the organization's default.
func (sn senderState) dailyLimit(org messages.Limits) int {
	if sn.override != nil {
		return *sn.override
	}
	return org.DefaultDailyLimit
}

// deliveryJoin is what delivery reads of a message's sender.
type deliveryJoin struct {
	SenderPhone  string
	SenderStatus senders.Status
	Override     *int
}

// deliveryDest returns the destinations of deliveryColumns, in order.
func (c *claimRow) deliveryDest() []any {
	j := &c.deliveryJoin
	return append(c.Row.ScanDest(), &j.SenderPhone, &j.SenderStatus, &j.Override)
}

func (j deliveryJoin) sender() senderState {
	return senderState{phone: j.SenderPhone, status: j.SenderStatus, override: j.Override}
}

// limitOf is the organization's sender throttle, else the configured default.
func (s *Service) limitOf(o messages.Limits) pace.Limit {
	l := pace.Limit{Rate: s.cfg.SenderRate, Burst: s.cfg.SenderBurst}
	if o.SenderRate != nil && *o.SenderRate > 0 {
		l.Rate = *o.SenderRate
	}
	if o.SenderBurst != nil && *o.SenderBurst > 0 {
		l.Burst = *o.SenderBurst
	}
	return l
}

// throttleKey names a sender's bucket.
func throttleKey(t db.Tenant, senderID int64) string {
	return "sender:" + t.Schema + ":" + itoa(senderID)
}
