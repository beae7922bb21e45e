package acceptance

// The statements of acceptance, each in its one-message and its batch
// form side by side. The rules of a send and where each is enforced:
//
//	rule                                   statement step
//	the sender exists and is the request's  acceptSQL / acceptBatchSQL: s
//	the sender may send (active)            acceptSQL / acceptBatchSQL: ok
//	the recipient has not opted out         acceptSQL / acceptBatchSQL: o / s (under the lock of lockOptOuts, docs/design.md §Consent)
//	the template is approved (template sends)  acceptSQL with template: tl, tp (template sends never batch)
//	the service window (when the network has one)  acceptSQL / acceptBatchSQL: s (windowSQL)
//	the daily limit                         acceptSQL / acceptBatchSQL: c, u (the 'accept' counter, WHERE used < limit)
//	the message, queued                     insert_message / insert_batch, after the counter (a release: acceptSQL's m)
//	its delivery job                        Jobs.InsertManyFastTx (the job outbox) in the same transaction (enqueue)
//
// The delivery's rules are enforced by package delivery's statements. Each
// takes $n arguments and runs through db.Prepared; the tenant's schema is
// written into the text (db.Tenant), so each tenant has texts of its own.

import (
	"strconv"
	"time"

	"github.com/bizmsg/platform/platform/db"

	"github.com/bizmsg/platform/platform/messages"
)

// acceptSQL is the acceptance statement of tenant t for a sender named by
// id (byID) or by phone, with $n arguments for db.Prepared: $1 the
// organization's default daily limit (its sender numbers' without an
// override; the organization as the request's authentication read it, or
// messages.Counters.ReadLimits), $2 the request's sender phone ("" if none), $3 the
// recipient, with a window (only) the message's type, then the acceptance
// time (whose UTC day is the day whose limit it counts against), with
// template the message's template, and by id the sender's id last
// (sendArgs). A release (below)
// takes the whole message instead: $3 to $12 (recipient, recipient's user
// id, type, content, file name, size, file type, duration, client
// reference, acceptance time; the duration bigint), with template $13 the
// template and $14 its template_ref, then the sender's id, the message's
// id and the reserve.
// Its steps, each feeding the next, so that a refused step changes nothing
// after it:
//
//   - s: the sender (by id, else by phone) with its daily limit (its
//     override, else the organization's default, $1);
//   - o: whether the recipient is on the opt-out list. The transaction
//     took the phone's opt-out lock in share mode before this statement
//     (lockOptOuts), so its snapshot sees an opt-out that committed before,
//     and one committing later waits for this send's commit (docs/design.md,
//     §Consent). No function of the tenant schema is called: Citus refused
//     one for a moment after a schema move (docs/scaling.md, §Rebalancing);
//   - ok: the sender if it is active, the request's phone, if any, is its,
//     the recipient has not opted out and, with a service window, the
//     message is a template or the recipient wrote to the sender within the
//     window (windowSQL);
//   - c, u: the daily-limit reservation: the sender's acceptance counter for
//     the day (its 'accept' row) goes up only while it is under the limit
//     (UPDATE ... WHERE used < limit), so concurrent sends never pass it. Its
//     row lock is held from here to the commit: for the message's insert
//     (insert_message, the next statement) and the commit. Delivery counts
//     in the day's 'deliver' row, so a delivery never holds this lock. A
//     day's first send of a sender finds no row (c): the result says so
//     (no_counter), and accept creates it (messages.Counters.Create) and
//     runs the statement again.
//
// The message itself is inserted by insert_message once the counter is
// raised, and its delivery job by the job outbox in the same transaction
// (accept). Two statements, not one with an INSERT step: Citus runs a
// statement whose steps write only by UPDATE on the tenant's node alone,
// and one with an INSERT step through the coordinator, which sends its
// intermediate results to every worker node, so that any node down failed
// every organization's sends (docs/scaling.md, §A worker node down). On
// one server the statement with the INSERT step in it measured no less
// CPU a message (docs/scaling.md, §Measured), so both run these two.
//
// The result row tells a refusal apart: no sender, a sender that may not
// send, an opted-out recipient, a closed window, or (else) the daily limit.
// Its columns: the sender's id, phone, status and limit, counted (the
// counter was raised), opted_out, window_open, no_counter, and with
// template approved, with release scheduled.
//
// With release, the statement is a scheduled message's release (Release):
// the same checks of a send made at the release time, and a step m UPDATEs
// the stored message (the sender by id)
// from scheduled to queued when u raised the counter, in the same
// statement. A step r first locks that row FOR UPDATE while it is still
// scheduled, and ok requires it, so that a release and a cancellation (or
// a second run of the release) are serialised on the row: whichever
// commits first wins and the other finds the message no longer scheduled
// and changes nothing. The result's last column, scheduled, tells that
// case apart. A release also takes a reserve (a campaign's
// reserve_percent, 0 for a scheduled send): step u raises the
// counter only while it is under limit − ceil(limit·reserve/100), so a
// campaign leaves that share of the day to the organization's other sends.
func acceptSQL(t db.Tenant, v acceptVariant) string {
	byID, window, template, release := v.byID, v.window, v.template, v.release
	// The arguments' placeholders: a send's statement takes only what it
	// checks (Postgres must know the type of every argument), a
	// release's the whole message too (its step m).
	recipient, typ, at, next := "$3::text", "$5::text", "$12::timestamptz", 13
	switch {
	case release:
	case window > 0:
		typ, at, next = "$4::text", "$5::timestamptz", 6
	default:
		at, next = "$4::timestamptz", 5
	}
	arg := func(cast string) string {
		next++
		return "$" + strconv.Itoa(next-1) + cast
	}
	tplID, tplRef, msgArg, reserve := "", "", "", ""
	if template {
		tplID = arg("::bigint")
		if release {
			tplRef = arg("::text")
		}
	}
	find := "s.phone = $2::text"
	if byID {
		find = "s.id = " + arg("::bigint")
	}
	if release {
		msgArg, reserve = arg("::bigint"), arg("::int")
	}
	sc := t.Quoted()
	// A template message (template) also needs its template approved at
	// acceptance: step tl locks the template row in share mode, so a
	// status change committed before the lock is seen (the row is read
	// again at its newest version) and one that comes after waits for this
	// commit. Other sends run the statement without it.
	tpl, tplOK, tplOut := "", "", ""
	if template {
		tpl = `
		tl AS (
		  SELECT x.id FROM ` + sc + `.templates x WHERE x.id = ` + tplID + ` AND x.status = 'approved' FOR SHARE),
		tp AS (
		  SELECT EXISTS (SELECT 1 FROM tl) AS approved),`
		tplOK, tplOut = " AND (SELECT approved FROM tp)", ", (SELECT approved FROM tp)"
	}
	rel, relOK, relOut, m := "", "", "", ""
	// lim is the counter's bound: the limit, less the reserve of a
	// release (a campaign's reserve_percent; 0 for a scheduled send).
	bound := "lim"
	if release {
		bound = "lim - ceil(lim * " + reserve + " / 100.0)::int"
		rel = `
		r AS (
		  SELECT x.id FROM ` + sc + `.messages x WHERE x.id = ` + msgArg + ` AND x.status = 'scheduled' FOR UPDATE),`
		relOK = " AND EXISTS (SELECT 1 FROM r)"
		relOut = ", EXISTS (SELECT 1 FROM r) AS scheduled"
		set := ""
		if template {
			set = ", template_id = " + tplID + ", template_ref = " + tplRef
		}
		// The release time is the message's acceptance time (created_at):
		// its UTC day is the day whose limit the message counts against,
		// on acceptance's side (u) and on delivery's. The other columns
		// are set to the draft's values (the stored ones), so that every
		// argument has its type.
		m = `,
		m AS (
		  UPDATE ` + sc + `.messages x
		     SET status = 'queued', to_phone = $3::text, recipient_user_id = $4::bigint, type = $5::text,
		         content = $6::text, file_name = $7::text, file_size = $8::bigint, file_type = $9::text,
		         duration = $10::bigint, client_reference = $11::text,
		         created_at = $12::timestamptz, updated_at = $12::timestamptz` + set + `
		    FROM u
		   WHERE x.id = ` + msgArg + ` AND x.sender_number_id = u.sender_number_id AND x.status = 'scheduled'
		  RETURNING x.id AS message_id)`
	}
	counted := "EXISTS (SELECT 1 FROM u)"
	if release {
		counted = "EXISTS (SELECT 1 FROM m)"
	}
	day := "(" + at + " AT TIME ZONE 'UTC')::date"
	return `WITH` + rel + tpl + ` s AS (
		  SELECT s.id, s.phone, s.status, coalesce(s.daily_limit_override, $1::int) AS lim,
		         ` + windowSQL(sc, window, "s.id", recipient, typ, at) + ` AS window_open
		    FROM ` + sc + `.sender_numbers s
		   WHERE ` + find + `),
		o AS (
		  SELECT EXISTS (SELECT 1 FROM ` + sc + `.opt_outs x WHERE x.phone = ` + recipient + `) AS opted_out),
		ok AS (
		  SELECT id, ` + bound + ` AS lim FROM s, o WHERE status = 'active' AND ($2::text = '' OR phone = $2::text) AND lim >= 1
		     AND NOT o.opted_out AND s.window_open` + tplOK + relOK + `),
		c AS (
		  SELECT d.sender_number_id FROM ` + sc + `.daily_usage d JOIN ok ON d.sender_number_id = ok.id
		   WHERE d.day = ` + day + ` AND d.side = 'accept'),
		u AS (
		  UPDATE ` + sc + `.daily_usage u SET used = u.used + 1, bound = ok.lim FROM ok
		   WHERE u.sender_number_id = ok.id AND u.day = ` + day + ` AND u.side = 'accept'
		     AND ok.lim >= 1 AND u.used < ok.lim
		  RETURNING u.sender_number_id)` + m + `
		SELECT s.id AS sender_id, s.phone, s.status, s.lim, ` + counted + ` AS counted, o.opted_out, s.window_open,
		       EXISTS (SELECT 1 FROM ok) AND NOT EXISTS (SELECT 1 FROM c) AS no_counter` + tplOut + relOut + `
		  FROM (SELECT 1) one LEFT JOIN s ON true LEFT JOIN o ON true`
}

// acceptVariant names one of acceptSQL's texts.
type acceptVariant struct {
	// byID: the sender is named by its id, else by its phone.
	byID bool
	// window is the service window; 0 for none.
	window time.Duration
	// template: a template message, whose approval the statement checks.
	template bool
	// release: a scheduled message's release, which queues the stored
	// message (step m updates it).
	release bool
}

// windowSQL is the service window's condition in tenant schema sc (docs/api.md,
// §Service window): true without a window (0) or for a template message,
// else whether the recipient wrote to the sender within the window before
// the acceptance time. Its arguments are SQL: the sender's id, the
// recipient, the message type and the acceptance time.
func windowSQL(sc string, window time.Duration, sender, recipient, typ, at string) string {
	if window <= 0 {
		return "true"
	}
	return `(` + typ + ` = 'template' OR EXISTS (SELECT 1 FROM ` + sc + `.last_inbound l
		  WHERE l.sender_number_id = ` + sender + ` AND l.phone = ` + recipient + `
		    AND l.at > ` + at + ` - make_interval(secs => ` + strconv.FormatFloat(window.Seconds(), 'f', -1, 64) + `)))`
}

// acceptBatchSQL is acceptSQL of tenant t for several messages at once, with
// $n arguments for db.Prepared, the i-th element of each array being the
// i-th message: sender id $1 (0 when named by phone), sender phone $2 (""
// when named by id; when both are given they must name one number),
// recipient $3, type $4, acceptance time $5 (its UTC day is the day whose
// limit it counts against) and the organization's default daily limit $6
// (as each send's request read it).
//
//   - i: the messages, each with its ordinal;
//   - s, ok: each message's sender, whether its recipient opted out and
//     its window, and those that may send (as acceptSQL);
//   - want: per sender and day, its messages in the batch;
//   - c, u: the daily-limit reservation (reserveSQL), per sender
//     and day all its messages or none: the counter goes up by their
//     number only while it stays within the limit. Counters ('accept'
//     rows) are locked in sender and day order, so concurrent batches
//     cannot deadlock; when one is missing, none goes up.
//
// It returns, per message, its ordinal, its sender's id (none when no
// sender was found), whether it was counted (accepted: acceptMany inserts
// it, insert_batch, with its delivery job) and whether its sender's
// counter for the day is missing (missing: acceptMany creates it and runs
// the statement again). Like acceptSQL it writes only by UPDATE, so that
// Citus runs it on the tenant's node alone.
func acceptBatchSQL(t db.Tenant, window time.Duration) string {
	sc := t.Quoted()
	return `WITH i AS (
		  SELECT (x.created_at AT TIME ZONE 'UTC')::date AS day, x.*
		    FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::int[]) WITH ORDINALITY
		         AS x(sender_id, sender_phone, to_phone, type, created_at, org_limit, ord)),
		s AS (
		  SELECT i.ord, i.day, i.sender_phone, s.id, s.phone, s.status,
		         coalesce(s.daily_limit_override, i.org_limit) AS lim,
		         EXISTS (SELECT 1 FROM ` + sc + `.opt_outs x WHERE x.phone = i.to_phone) AS opted_out,
		         ` + windowSQL(sc, window, "s.id", "i.to_phone", "i.type", "i.created_at") + ` AS window_open
		    FROM i
		    JOIN ` + sc + `.sender_numbers s ON s.id = CASE WHEN i.sender_id > 0 THEN i.sender_id
		         ELSE (SELECT x.id FROM ` + sc + `.sender_numbers x WHERE x.phone = i.sender_phone) END),
		ok AS (
		  SELECT ord, day, id, lim FROM s
		   WHERE status = 'active' AND (sender_phone = '' OR phone = sender_phone) AND lim >= 1
		     AND NOT opted_out AND window_open),
		want AS (
		  SELECT id, day, min(lim) AS lim, count(*) AS n FROM ok GROUP BY id, day),
		` + reserveSQL(sc) + `
		SELECT s.ord, s.id, u.sender_number_id IS NOT NULL AS accepted,
		       ok.ord IS NOT NULL AND c.sender_number_id IS NULL AS missing
		  FROM s LEFT JOIN ok ON ok.ord = s.ord
		  LEFT JOIN u ON u.sender_number_id = ok.id AND u.day = ok.day
		  LEFT JOIN c ON c.sender_number_id = ok.id AND c.day = ok.day`
}

// reserveSQL is the daily-limit reservation of acceptBatchSQL, of tenant
// schema sc, on the used counter of the sender's 'accept' daily_usage rows:
// for each sender (want's column id) and day of the statement's CTE want (n
// messages, limit lim), the counter goes up by n only while it stays within
// lim, all or none. // It is two steps, c and u, named in the statement:
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
// down). Delivery's claim reserves on its 'deliver' counters with the same
// steps (package delivery's reserveSQL).
func reserveSQL(sc string) string {
	return `c AS (
	  SELECT d.sender_number_id, d.day FROM ` + sc + `.daily_usage d
	    JOIN want w ON d.sender_number_id = w.id AND d.day = w.day
	   WHERE d.side = 'accept'
	   ORDER BY d.sender_number_id, d.day FOR UPDATE OF d),
	u AS (
	  UPDATE ` + sc + `.daily_usage d SET used = d.used + w.n, bound = w.lim
	    FROM want w
	   WHERE d.sender_number_id = w.id AND d.day = w.day AND d.side = 'accept'
	     AND d.used + w.n <= w.lim
	     AND (SELECT count(*) FROM c) = (SELECT count(*) FROM want)
	  RETURNING d.sender_number_id, d.day)`
}

// batchInsertMark begins insert_batch's column list: the tests count a
// batch's inserts by it.
const batchInsertMark = `(created_at, sender_number_id, to_phone, recipient_user_id`

// endScheduledSQL ends scheduled message $1 of tenant t while it is still
// scheduled, under its row lock (UPDATE ... WHERE status = 'scheduled', the
// condition acceptSQL's release also holds to, so that of a cancellation
// and a release exactly one changes the message): with canceled, status
// canceled at $2; else status failed at $2 with error code $3 and message
// $4 (a release refused). It returns the message as changed
// (messages.ChangedColumns), or nothing when it was no longer scheduled.
func endScheduledSQL(t db.Tenant, canceled bool) string {
	set := `status = 'canceled', canceled_at = $2::timestamptz, updated_at = $2::timestamptz`
	if !canceled {
		set = `status = 'failed', failed_at = $2::timestamptz, updated_at = $2::timestamptz,
		       error_code = $3::text, error_message = $4::text`
	}
	return `WITH m AS (
		  UPDATE ` + t.Table("messages") + ` x SET ` + set + `
		   WHERE x.id = $1::bigint AND x.status = 'scheduled'
		  RETURNING 'scheduled'::text AS old_status, x.*)
		SELECT ` + messages.ChangedColumns + ` FROM m`
}

// scheduledSQL reads message $1 of tenant t (messages.Columns) for its
// release.
func scheduledSQL(t db.Tenant) string {
	return `SELECT ` + messages.Columns + ` FROM ` + t.Table("messages") + ` m WHERE m.id = $1::bigint`
}

// scheduledManySQL reads the messages $1 of tenant t (messages.Columns)
// for their release together (releaseBatch).
func scheduledManySQL(t db.Tenant) string {
	return `SELECT ` + messages.Columns + ` FROM ` + t.Table("messages") + ` m WHERE m.id = ANY($1::bigint[])`
}
