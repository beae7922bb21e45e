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
//	the daily limit                         acceptSQL / acceptBatchSQL: u (the 'accept' counter, WHERE used < limit)
//	the message, queued                     acceptSQL / acceptBatchSQL: m
//	its delivery job                        Jobs.InsertManyFastTx (the job outbox) in the same transaction (enqueue)
//
// The delivery's rules are enforced by package delivery's statements. Each
// takes $n arguments and runs through db.Prepared; the tenant's schema is
// written into the text (db.Tenant), so each tenant has texts of its own.

import (
	"strconv"
	"strings"
	"time"

	"github.com/bizmsg/platform/platform/db"

	"github.com/bizmsg/platform/platform/messages"
)

// acceptSQL is the acceptance statement of tenant t for a sender named by
// id (byID) or by phone, with $n arguments for db.Prepared: $1 the
// organization, $2 the request's sender phone ("" if none), $3 to $12 the
// message (recipient, recipient's user id, type, content, file name, size,
// file type, duration, client reference, acceptance time, whose UTC day is
// the day whose limit it counts against), and, by id, $13 the sender's
// id; with template, $13 is the message's template and $14 its
// template_ref (and the sender's id $15). The duration is bigint, as in
// acceptBatchSQL.
// Its steps, each feeding the next, so that a refused step stores nothing
// after it:
//
//   - s: the sender (by id, else by phone) with its daily limit (its
//     override, else the organization's default);
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
//   - u: the daily-limit reservation: the sender's acceptance counter for
//     the day (its 'accept' row) goes up only while it is under the limit
//     (INSERT ... ON CONFLICT DO UPDATE ... WHERE used < limit), so
//     concurrent sends never pass it. Its row lock is held from here to the
//     commit: for the two inserts below, in the same statement, and the
//     commit. Delivery counts in the day's 'deliver' row, so a delivery
//     never holds this lock;
//   - m: the message, queued.
//
// Its delivery job is inserted by River in the same transaction (accept).
//
// The result row tells a refusal apart: no sender, a sender that may not
// send, an opted-out recipient, a closed window, or (else) the daily limit.
//
// With release, the statement is a scheduled message's release (Release):
// the same checks of a send made at the release time, but step m UPDATEs
// the stored message (id $14, or $16 with template; the sender by id)
// from scheduled to queued instead of inserting one. A step r first locks
// that row FOR UPDATE while it is still scheduled, and ok requires it, so
// that a release and a cancellation (or a second run of the release) are
// serialised on the row: whichever commits first wins and the other finds
// the message no longer scheduled and changes nothing. The result's last
// column, scheduled, tells that case apart. A release also takes a reserve
// ($15, or $17 with template: a campaign's reserve_percent, 0 for a
// scheduled send): step u raises the counter only while it is under
// limit − ceil(limit·reserve/100), so a campaign leaves that share of the
// day to the organization's other sends.
func acceptSQL(t db.Tenant, byID bool, window time.Duration, template, release bool) string {
	find := "s.phone = $2::text"
	msgArg := "$14::bigint"
	if byID {
		find = "s.id = $13::bigint"
		if template {
			find, msgArg = "s.id = $15::bigint", "$16::bigint"
		}
	}
	sc := t.Quoted()
	// A template message (template) also needs its template approved at
	// acceptance: step tl locks the template row in share mode, so a
	// status change committed before the lock is seen (the row is read
	// again at its newest version) and one that comes after waits for this
	// commit. Other sends run the statement without it.
	tpl, tplOK, tplCol, tplVal, tplOut := "", "", "", "", ""
	if template {
		tpl = `
		tl AS (
		  SELECT x.id FROM ` + sc + `.templates x WHERE x.id = $13::bigint AND x.status = 'approved' FOR SHARE),
		tp AS (
		  SELECT EXISTS (SELECT 1 FROM tl) AS approved),`
		tplOK, tplCol, tplVal, tplOut = " AND (SELECT approved FROM tp)", ", template_id, template_ref", ", $13::bigint, $14::text",
			", (SELECT approved FROM tp)"
	}
	rel, relOK, relOut := "", "", ""
	// lim is the counter's bound: the limit, less the reserve of a
	// release ($15, or $17 with template: a campaign's reserve_percent;
	// 0 for a scheduled send).
	bound := "lim"
	if release {
		reserve := "$15::int"
		if template {
			reserve = "$17::int"
		}
		bound = "lim - ceil(lim * " + reserve + " / 100.0)::int"
	}
	m := `
		m AS (
		  INSERT INTO ` + sc + `.messages (sender_number_id, to_phone, recipient_user_id, type, content,
		         file_name, file_size, file_type, duration, status, client_reference, created_at, updated_at` + tplCol + `)
		  SELECT sender_number_id, $3::text, $4::bigint, $5::text, $6::text, $7::text, $8::bigint, $9::text,
		         $10::bigint, 'queued', $11::text, $12::timestamptz, $12::timestamptz` + tplVal + `
		    FROM u
		  RETURNING id AS message_id)`
	if release {
		rel = `
		r AS (
		  SELECT x.id FROM ` + sc + `.messages x WHERE x.id = ` + msgArg + ` AND x.status = 'scheduled' FOR UPDATE),`
		relOK = " AND EXISTS (SELECT 1 FROM r)"
		relOut = ", EXISTS (SELECT 1 FROM r) AS scheduled"
		set := ""
		if template {
			set = ", template_id = $13::bigint, template_ref = $14::text"
		}
		// The release time is the message's acceptance time (created_at):
		// its UTC day is the day whose limit the message counts against,
		// on acceptance's side (u) and on delivery's. The other columns
		// are set to the draft's values (the stored ones), so that every
		// argument has its type.
		m = `
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
	return `WITH` + rel + tpl + ` s AS (
		  SELECT s.id, s.phone, s.status, coalesce(s.daily_limit_override, o.default_daily_limit) AS lim,
		         ` + windowSQL(sc, window, "s.id", "$3::text", "$5::text", "$12::timestamptz") + ` AS window_open
		    FROM ` + sc + `.sender_numbers s JOIN central.organizations o ON o.id = $1::bigint
		   WHERE ` + find + `),
		o AS (
		  SELECT EXISTS (SELECT 1 FROM ` + sc + `.opt_outs x WHERE x.phone = $3::text) AS opted_out),
		ok AS (
		  SELECT id, ` + bound + ` AS lim FROM s, o WHERE status = 'active' AND ($2::text = '' OR phone = $2::text) AND lim >= 1
		     AND NOT o.opted_out AND s.window_open` + tplOK + relOK + `),
		u AS (
		  INSERT INTO ` + sc + `.daily_usage AS u (sender_number_id, day, side, used, bound)
		  SELECT id, ($12::timestamptz AT TIME ZONE 'UTC')::date, 'accept', 1, lim FROM ok WHERE lim >= 1
		  ON CONFLICT (sender_number_id, day, side) DO UPDATE SET used = u.used + 1
		   WHERE u.used < EXCLUDED.bound
		  RETURNING u.sender_number_id),` + m + `
		SELECT s.id AS sender_id, s.phone, s.status, s.lim, m.message_id, o.opted_out, s.window_open` + tplOut + relOut + `
		  FROM (SELECT 1) one LEFT JOIN s ON true LEFT JOIN m ON true LEFT JOIN o ON true`
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
// $n arguments for db.Prepared, the i-th element of each array $2..$13 being
// the i-th message: sender id $2 (0 when named by phone), sender phone $3
// ("" when named by id; when both are given they must name one number),
// recipient $4, recipient's user id $5, type $6, content $7, file name $8,
// size $9, file type $10, duration $11, client reference $12 and
// acceptance time $13 (its UTC day is the day whose limit it counts
// against). Durations are bigint, so that a value past the integer column
// is the database's data error (which makes the batch fall back), not the
// driver's when it encodes a prepared statement's argument. $1 is the
// organization; the messages' id sequence is named in
// the text (a constant, so that the name is resolved once per statement, not
// once per row).
//
//   - i: the messages, each with its ordinal and a message id drawn from
//     the table's sequence in that order;
//   - s, ok: each message's sender, whether its recipient opted out and
//     its window, and those that may send (as acceptSQL);
//   - want: per sender and day, its messages in the batch;
//   - u: the daily-limit reservation, per sender and day all its messages
//     or none: the counter goes up by their number only while it stays
//     within the limit. Counters ('accept' rows) are locked in sender and
//     day order, so concurrent batches cannot deadlock;
//   - m: the messages of the counters u reserved for (their delivery jobs
//     are inserted by River in the same transaction, acceptMany).
//
// It returns, per message, its ordinal and, when accepted, its id and
// sender.
func acceptBatchSQL(t db.Tenant, window time.Duration) string {
	sc := t.Quoted()
	seq := "'" + strings.ReplaceAll(t.Table("messages_id_seq"), "'", "''") + "'::regclass"
	return `WITH i AS (
		  SELECT nextval(` + seq + `) AS id, (x.created_at AT TIME ZONE 'UTC')::date AS day, x.*
		    FROM unnest($2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[],
		                $8::text[], $9::int[], $10::text[], $11::bigint[], $12::text[],
		                $13::timestamptz[]) WITH ORDINALITY
		         AS x(sender_id, sender_phone, to_phone, recipient_user_id, type, content,
		              file_name, file_size, file_type, duration, client_reference, created_at, ord)
		   ORDER BY x.ord),
		s AS (
		  SELECT i.id AS mid, i.day, i.sender_phone, s.id, s.phone, s.status,
		         coalesce(s.daily_limit_override, o.default_daily_limit) AS lim,
		         EXISTS (SELECT 1 FROM ` + sc + `.opt_outs x WHERE x.phone = i.to_phone) AS opted_out,
		         ` + windowSQL(sc, window, "s.id", "i.to_phone", "i.type", "i.created_at") + ` AS window_open
		    FROM i
		    JOIN ` + sc + `.sender_numbers s ON s.id = CASE WHEN i.sender_id > 0 THEN i.sender_id
		         ELSE (SELECT x.id FROM ` + sc + `.sender_numbers x WHERE x.phone = i.sender_phone) END
		    JOIN central.organizations o ON o.id = $1::bigint),
		ok AS (
		  SELECT mid, day, id, lim FROM s
		   WHERE status = 'active' AND (sender_phone = '' OR phone = sender_phone) AND lim >= 1
		     AND NOT opted_out AND window_open),
		want AS (
		  SELECT id, day, min(lim) AS lim, count(*) AS n FROM ok GROUP BY id, day),
		u AS (` + messages.ReserveSQL(sc, "accept", "used", "id") + `),
		m AS (
		  INSERT INTO ` + sc + `.messages (id, sender_number_id, to_phone, recipient_user_id, type, content,
		         file_name, file_size, file_type, duration, status, client_reference, created_at, updated_at)
		  SELECT i.id, ok.id, i.to_phone, i.recipient_user_id, i.type, i.content, i.file_name, i.file_size,
		         i.file_type, i.duration, 'queued', i.client_reference, i.created_at, i.created_at
		    FROM i JOIN ok ON ok.mid = i.id JOIN u ON u.sender_number_id = ok.id AND u.day = ok.day
		   ORDER BY i.id
		  RETURNING id AS message_id, sender_number_id AS sender_id)
		SELECT i.ord, m.message_id, m.sender_id FROM i LEFT JOIN m ON m.message_id = i.id`
}

// scheduleSQL stores a scheduled send of tenant t ($1 sender id, $2..$10 the
// message: recipient, type, content, file name, size, file type, duration,
// client reference, template id; $11 its template_ref, $12 its send_at, $13
// the scheduling time): status scheduled, counted against nothing. Its
// release job is inserted by River in the same transaction (schedule). It
// returns the message's id.
func scheduleSQL(t db.Tenant) string {
	return `INSERT INTO ` + t.Table("messages") + ` (sender_number_id, to_phone, type, content, file_name,
		       file_size, file_type, duration, client_reference, template_id, template_ref, send_at, status,
		       created_at, updated_at)
		VALUES ($1::bigint, $2::text, $3::text, $4::text, $5::text, $6::bigint, $7::text, $8::bigint, $9::text,
		        $10::bigint, $11::text, $12::timestamptz, 'scheduled', $13::timestamptz, $13::timestamptz)
		RETURNING id`
}

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

// messageStatusSQL reads message $1 of tenant t's status, inbound or
// outbound: a cancellation of a message that exists but is not scheduled
// (an inbound one too) is 409 not_cancelable, not 404 (docs/api.md,
// §Scheduled sends).
func messageStatusSQL(t db.Tenant) string {
	return `SELECT status FROM ` + t.Table("messages") + ` WHERE id = $1::bigint`
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

// stageManySQL stores checked drafts of tenant t as scheduled messages
// under their ids (ReleaseMany), one per element of the arrays $1..$14:
// the columns it names, in that order.
func stageManySQL(t db.Tenant) string {
	return `INSERT INTO ` + t.Table("messages") + ` (id, sender_number_id, to_phone, type, content, file_name,
		       file_size, file_type, duration, client_reference, template_id, template_ref, campaign_id, status,
		       created_at, updated_at)
		SELECT x.id, x.sender, x.phone, x.type, x.content, x.file_name, x.file_size, x.file_type, x.duration,
		       x.ref, x.template_id, x.template_ref, x.campaign_id, 'scheduled', x.at, x.at
		  FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[],
		              $8::text[], $9::int[], $10::text[], $11::bigint[], $12::text[], $13::bigint[],
		              $14::timestamptz[])
		       AS x(id, sender, phone, type, content, file_name, file_size, file_type, duration, ref, template_id,
		            template_ref, campaign_id, at)`
}

// unstageSQL deletes tenant t's staged messages $1 their release refused.
func unstageSQL(t db.Tenant) string {
	return `DELETE FROM ` + t.Table("messages") + ` WHERE id = ANY($1::bigint[]) AND status = 'scheduled'`
}
