package delivery

// The statements of delivery, each in its one-message and its batch form
// side by side. The rules of a delivery and where each is enforced:
//
//	rule                                   statement step
//	one job delivers a message at a time    claimOneSQL / claimManySQL (lockMessagesSQL: rows locked in id order; heldSQL)
//	a conversation's messages go in order   claimOneSQL / claimManySQL (blockerSQL: an earlier one still queued)
//	the daily limit, as it is now            claimOneSQL / claimManySQL (the 'deliver' counter, reserveSQL: c, u), claimLocked
//	a conversation's next message           nextSQL (after each record, for the job that carries on)
//	the sent record and its counters        markOneSentSQL / markSentSQL (sentSetSQL, sentCountersSQL)
//
// The acceptance's rules are enforced by package acceptance's statements.
// Each takes $n arguments and runs through db.Prepared; the tenant's schema
// is written into the text (db.Tenant), so each tenant has texts of its own.

import (
	"github.com/bizmsg/platform/platform/db"

	"github.com/bizmsg/platform/platform/messages"
)

// deliveryColumns and deliveryFrom read a message (alias m) with its
// sender, as deliveryJoin scans them; deliveryDest is the positional scan of
// deliveryColumns. The organization's limits are not joined: they come from
// central.organizations in a statement of their own (messages.Counters.ReadLimits),
// and the claims take the default daily limit as an argument, so that each
// statement reads its tenant schema alone (on Citus, one worker's).
var deliveryColumns = messages.Columns + `, s.phone AS sn_phone, s.status AS sn_status,
		       s.daily_limit_override AS sn_daily_limit_override`

// deliveryFrom is the FROM clause of deliveryColumns: sc is the tenant
// schema (its quoted name).
func deliveryFrom(sc string) string {
	return sc + `.messages m
		  JOIN ` + sc + `.sender_numbers s ON s.id = m.sender_number_id`
}

// lockMessagesSQL locks messages ids (an array of ids) of tenant schema sc
// in id order and reads them with their senders, each one's blocker
// (blockerSQL, with since), whether another job's claim holds it (heldSQL:
// jobs is the claimant of each of ids, in the same order, and lease the
// seconds a claim holds, Config.ClaimLease) and its claimant: the first
// step of claimManySQL and of claimLocked. Its arguments are SQL: the
// schema's quoted name, and placeholders. The claimant is looked up by
// position, not by a join with unnest: Citus 13.2 cannot run such a join
// in a FOR UPDATE CTE that feeds an INSERT (as blockerSQL says).
func lockMessagesSQL(sc, ids, jobs, since, lease string) string {
	job := `(` + jobs + `)[array_position(` + ids + `, m.id)]`
	return `SELECT ` + deliveryColumns + `, (` + blockerSQL(sc, since) + `) AS blocker_id,
	       ` + heldSQL(job, lease) + ` AS held, ` + job + ` AS claimant
	  FROM ` + deliveryFrom(sc) + `
	WHERE m.id = ANY(` + ids + `) ORDER BY m.id FOR UPDATE OF m`
}

// heldSQL is whether message m is held by the claim of a delivery job other
// than job (a placeholder or column): claimed by it less than lease seconds
// ago (a placeholder: Config.ClaimLease), on the database's clock, which
// every process shares (claimSetSQL stamps claimed_at with it). One job at
// a time delivers a message; a claim lapses after the lease, the longest a
// live job's run holds it, so that a job killed mid-delivery is taken over.
func heldSQL(job, lease string) string {
	return `(m.claimed_by IS NOT NULL AND m.claimed_by <> ` + job + `
	         AND m.claimed_at > statement_timestamp() - make_interval(secs => ` + lease + `))`
}

// blockerSQL finds the message that message m (an outer alias) waits for,
// if any: the nearest earlier message of its conversation (the same sender
// number and recipient) that is still queued and not failing for longer
// than the order window (its failing_since after since, a placeholder: the
// claim's time less Config.OrderWindow). A queued message is queued however
// far its delivery went (waiting for its job or its token, in flight, or
// between retries after a transient failure), so m waits until that
// message's sent or failed record commits, or until its delivery has been
// failing for the window. It reads messages_queued_conversation_idx
// backwards from m's id, one probe in the usual case; failing_since only
// filters what it finds. The claims read it as a scalar subquery, not a
// LATERAL join: Citus 13.2 cannot run a LATERAL join with LIMIT in a
// FOR UPDATE CTE that feeds an INSERT (it reads the CTE's binary
// intermediate result as text: "invalid input syntax for type bigint:
// \"PGCOPY\"", docs/scaling.md).
func blockerSQL(sc, since string) string {
	return `SELECT e.id FROM ` + sc + `.messages e
	   WHERE e.sender_number_id = m.sender_number_id AND e.to_phone = m.to_phone
	     AND e.status = 'queued' AND e.id < m.id
	     AND (e.failing_since IS NULL OR e.failing_since > ` + since + `)
	   ORDER BY e.id DESC LIMIT 1`
}

// claimOneSQL is claimManySQL for one message of tenant t, with $n
// arguments for db.Prepared: $1 the organization's default daily limit
// (messages.Limits), $2 the message id, $3 the time, $4 the window's start
// for blockers (blockerSQL), $5 the claiming job, $6 the seconds a claim
// holds (heldSQL). The same result, from a
// statement that costs Postgres half as much to plan as the batch statement
// (0.41 against 0.79 ms, pg_stat_statements over a 100-tenant bench run; a
// batch of one is what a worker runs when its jobs belong to many tenants),
// and nothing once prepared. One counter row, so no order to keep. The
// counter goes up by an UPDATE (u), so that Citus runs the statement on the
// tenant's node alone (as reserveSQL says); when the sender's
// 'deliver' counter for the day is missing (c: a day's first claim), the
// message is not claimed and the result says so (missing): the claim
// creates the counter (messages.Counters.Create) and runs again.
func claimOneSQL(t db.Tenant) string {
	sc := t.Quoted()
	day := "(m.created_at AT TIME ZONE 'UTC')::date"
	claimable := `m.status = 'queued' AND m.dispatched_at IS NULL AND m.sn_status = 'active' AND m.blocker_id IS NULL
	     AND NOT m.held`
	return `WITH m AS (
	  SELECT ` + deliveryColumns + `, (` + blockerSQL(sc, "$4::timestamptz") + `) AS blocker_id,
	         ` + heldSQL("$5::bigint", "$6::float8") + ` AS held,
	         $5::bigint AS claimant
	    FROM ` + deliveryFrom(sc) + `
	   WHERE m.id = $2::bigint FOR UPDATE OF m),
	c AS (
	  SELECT d.sender_number_id FROM ` + sc + `.daily_usage d JOIN m ON d.sender_number_id = m.sender_number_id
	   WHERE d.day = ` + day + ` AND d.side = 'deliver'),
	u AS (
	  UPDATE ` + sc + `.daily_usage d SET dispatched = d.dispatched + 1, bound = coalesce(m.sn_daily_limit_override, $1::int)
	    FROM m
	   WHERE d.sender_number_id = m.sender_number_id AND d.day = ` + day + ` AND d.side = 'deliver'
	     AND ` + claimable + ` AND d.dispatched < coalesce(m.sn_daily_limit_override, $1::int)
	  RETURNING d.dispatched),
	x AS (
	  UPDATE ` + sc + `.messages x SET ` + claimSetSQL("$5::bigint", "$3::timestamptz") + `
	    FROM m WHERE x.id = m.id AND m.status = 'queued' AND m.blocker_id IS NULL AND NOT m.held
	     AND (m.dispatched_at IS NOT NULL OR EXISTS (SELECT 1 FROM u))
	  RETURNING x.id)
	SELECT m.*, EXISTS (SELECT 1 FROM x) AS claimed,
	       ` + claimable + ` AND NOT EXISTS (SELECT 1 FROM c) AS missing
	  FROM m`
}

// claimSetSQL is the SET list of a claim of message x by job at time now
// (placeholders or columns): it is counted dispatched once, at its first
// claim, and held by job from now on the database's clock (heldSQL).
func claimSetSQL(job, now string) string {
	return `dispatched_at = coalesce(x.dispatched_at, ` + now + `), claimed_by = ` + job + `,
	         claimed_at = statement_timestamp(), updated_at = ` + now
}

// claimManySQL is claimMany's statement for tenant t, with $n arguments
// for db.Prepared: $1 the organization's default daily limit, $2 the
// message ids, $3 the time, $4 the window's start for blockers, $5 each
// message's claiming job, $6 the seconds a claim holds (heldSQL). A message that waits for a blocker,
// or that another job's claim holds, is read, not claimed. Its last column,
// missing, is whether a sender's 'deliver' counter for a day was missing
// (reserveSQL): then no counter went up, and the claim creates
// the missing ones and runs again.
func claimManySQL(t db.Tenant) string {
	sc := t.Quoted()
	return `WITH m AS (` + lockMessagesSQL(sc, "$2::bigint[]", "$5::bigint[]", "$4::timestamptz", "$6::float8") + `),
	want AS (
	  SELECT sender_number_id, (created_at AT TIME ZONE 'UTC')::date AS day, count(*) AS n,
	         min(coalesce(sn_daily_limit_override, $1::int)) AS lim
	    FROM m WHERE status = 'queued' AND dispatched_at IS NULL AND sn_status = 'active' AND blocker_id IS NULL
	     AND NOT held
	   GROUP BY 1, 2),
	` + reserveSQL(sc) + `,
	x AS (
	  UPDATE ` + sc + `.messages x SET ` + claimSetSQL("m.claimant", "$3::timestamptz") + `
	    FROM m LEFT JOIN u ON u.sender_number_id = m.sender_number_id
	                      AND u.day = (m.created_at AT TIME ZONE 'UTC')::date
	   WHERE x.id = m.id AND m.status = 'queued' AND m.blocker_id IS NULL AND NOT m.held
	     AND (m.dispatched_at IS NOT NULL OR (u.sender_number_id IS NOT NULL AND m.sn_status = 'active'))
	  RETURNING x.id)
	SELECT m.*, x.id IS NOT NULL AS claimed, ` + missingCountersSQL + ` AS missing
	  FROM m LEFT JOIN x ON x.id = m.id`
}

// reserveSQL is the daily-limit reservation of claimManySQL, of tenant
// schema sc, on the dispatched counter of the sender's 'deliver'
// daily_usage rows: for each sender (want's column sender_number_id) and
// day of the statement's CTE want (n messages, limit lim), the counter goes
// up by n only while it stays within lim, all or none. // It is two steps, c and u, named in the statement:
//
//   - c locks the rows of want in sender and day order, so that concurrent
//     batches cannot deadlock;
//   - u raises them, and only when c found every row of want (a day's first
//     message of a sender finds none: the statement then changes no counter,
//     its caller creates the missing rows, messages.Counters.Create, and
//     runs it again). It returns the sender_number_id and day of each row
//     reserved on.
//
// An UPDATE, not an INSERT ... ON CONFLICT: Citus routes a statement whose
// CTEs modify only by UPDATE or DELETE to the tenant's node alone (a router
// plan), and plans one with an INSERT step through the coordinator, sending
// its intermediate results to every worker (docs/scaling.md, §A worker node
// down). Acceptance's batch reserves on its 'accept' counters with the same
// steps (package acceptance's reserveSQL).
func reserveSQL(sc string) string {
	return `c AS (
	  SELECT d.sender_number_id, d.day FROM ` + sc + `.daily_usage d
	    JOIN want w ON d.sender_number_id = w.sender_number_id AND d.day = w.day
	   WHERE d.side = 'deliver'
	   ORDER BY d.sender_number_id, d.day FOR UPDATE OF d),
	u AS (
	  UPDATE ` + sc + `.daily_usage d SET dispatched = d.dispatched + w.n, bound = w.lim
	    FROM want w
	   WHERE d.sender_number_id = w.sender_number_id AND d.day = w.day AND d.side = 'deliver'
	     AND d.dispatched + w.n <= w.lim
	     AND (SELECT count(*) FROM c) = (SELECT count(*) FROM want)
	  RETURNING d.sender_number_id, d.day)`
}

// missingCountersSQL is, in a statement with reserveSQL's steps, whether
// want holds a sender and day whose counter row c did not find (reserveSQL
// then reserved nothing).
const missingCountersSQL = `(SELECT count(*) FROM c) <> (SELECT count(*) FROM want)`

// nextSQL finds, for each conversation of $1 (sender numbers) and $2
// (recipients, in the same order) of tenant t, its next message: the oldest
// one still queued that is not failing for longer than the order window
// (failing_since after $3; such a message is left to its own job's
// retries), by a forward probe of messages_queued_conversation_idx, with
// its claimant and whether that claim still holds ($4 the seconds a claim
// holds, heldSQL). Conversations with none are absent.
func nextSQL(t db.Tenant) string {
	sc := t.Quoted()
	return `SELECT v.sender, v.phone, n.id, n.claimed_by,
	       n.claimed_at > statement_timestamp() - make_interval(secs => $4::float8) AS claim_holds
	  FROM unnest($1::bigint[], $2::text[]) v(sender, phone)
	  CROSS JOIN LATERAL (
	    SELECT e.id, e.claimed_by, e.claimed_at FROM ` + sc + `.messages e
	     WHERE e.sender_number_id = v.sender AND e.to_phone = v.phone AND e.status = 'queued'
	       AND (e.failing_since IS NULL OR e.failing_since > $3::timestamptz)
	     ORDER BY e.id LIMIT 1) n`
}

// sentSetSQL is the SET list of a sent record of message x, whose status
// before the record is o.status, from the delivery v (message_id,
// conversation_id, recipient_id, sent_at, delivered) at time now (a
// placeholder): queued becomes sent, or delivered when v.delivered, and a
// status a receipt set stays; delivered_at is the delivery's time when the
// network confirms it, unless a receipt set it first.
func sentSetSQL(now string) string {
	return `status = CASE WHEN o.status <> 'queued' THEN o.status
	                       WHEN v.delivered THEN 'delivered' ELSE 'sent' END,
	         message_id = v.message_id, conversation_id = v.conversation_id,
	         recipient_user_id = v.recipient_id, sent_at = v.sent_at,
	         delivered_at = CASE WHEN v.delivered AND o.status <> 'failed' THEN coalesce(x.delivered_at, v.sent_at)
	                             ELSE x.delivered_at END,
	         updated_at = ` + now
}

// sentCountersSQL ends a sent record whose CTE m returned the changed
// messages with their old_status: the delivery-side counters of each
// sender's day go up by its messages that were queued, in sent or in
// delivered, locked in sender and day order (l). With rows, the statement
// returns the changed messages (messages.ChangedColumns); else its last step is the
// counters' update.
func sentCountersSQL(sc string, rows bool) string {
	update := `UPDATE ` + sc + `.daily_usage u SET sent = u.sent + l.ns, delivered = u.delivered + l.nd FROM l
	 WHERE u.sender_number_id = l.sender_number_id AND u.day = l.day AND u.side = 'deliver'`
	counters := `c AS (
	  SELECT sender_number_id, (created_at AT TIME ZONE 'UTC')::date AS day,
	         count(*) FILTER (WHERE status = 'sent') AS ns, count(*) FILTER (WHERE status = 'delivered') AS nd
	    FROM m WHERE old_status = 'queued' GROUP BY 1, 2),
	l AS (
	  SELECT d.sender_number_id, d.day, c.ns, c.nd
	    FROM ` + sc + `.daily_usage d JOIN c USING (sender_number_id, day)
	   WHERE d.side = 'deliver'
	   ORDER BY d.sender_number_id, d.day FOR UPDATE OF d)`
	if !rows {
		return counters + `
	` + update
	}
	return counters + `,
	u AS (
	  ` + update + `)
	SELECT ` + messages.ChangedColumns + ` FROM m`
}

// markOneSentSQL is markSentSQL for one message: the same effect, from a
// statement that costs Postgres half as much to plan (0.21 against 0.41 ms),
// and nothing once prepared (db.Prepared). $1 to $5 are the network
// message, conversation and recipient ids, the sent time and whether the
// network confirms the delivery, $6 the time, $7 the message id.
func markOneSentSQL(t db.Tenant, rows bool) string {
	sc := t.Quoted()
	return `WITH o AS (
	  SELECT x.id, x.status FROM ` + sc + `.messages x
	   WHERE x.id = $7::bigint AND ` + recordableSQL + ` FOR UPDATE OF x),
	m AS (
	  UPDATE ` + sc + `.messages x
	     SET ` + sentSetSQL("$6::timestamptz") + `
	    FROM o, (SELECT $1::bigint AS message_id, $2::bigint AS conversation_id, $3::bigint AS recipient_id,
	                    $4::timestamptz AS sent_at, $5::boolean AS delivered) v
	   WHERE x.id = o.id
	  RETURNING ` + markedColumns(rows) + `),
	` + sentCountersSQL(sc, rows)
}

// markSentSQL is markSent's statement for tenant t, with $n arguments for
// db.Prepared: $1 the message ids, $2 to $6 each one's network message,
// conversation and recipient ids, sent time and whether the network
// confirms its delivery, $7 the time. With rows it returns the changed
// messages (messages.ChangedColumns).
func markSentSQL(t db.Tenant, rows bool) string {
	sc := t.Quoted()
	return `WITH o AS (
	  SELECT x.id, x.status FROM ` + sc + `.messages x
	   WHERE x.id = ANY($1::bigint[]) AND ` + recordableSQL + `
	   ORDER BY x.id FOR UPDATE OF x),
	m AS (
	  UPDATE ` + sc + `.messages x
	     SET ` + sentSetSQL("$7::timestamptz") + `
	    FROM o JOIN unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::timestamptz[], $6::boolean[])
	         v(id, message_id, conversation_id, recipient_id, sent_at, delivered) ON v.id = o.id
	   WHERE x.id = o.id
	  RETURNING ` + markedColumns(rows) + `),
	` + sentCountersSQL(sc, rows)
}
