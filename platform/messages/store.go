package messages

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Row is a tenant's messages row: the Message callers see, and the columns
// only the services read.
type Row struct {
	Message
	DispatchedAt *time.Time
	UpdatedAt    time.Time
	// TemplateRef is a template message's network.MessageTemplate as
	// JSON, for the network; nil for other messages.
	TemplateRef *string
}

// messageFields are a message row's columns in one order, each with its
// field: the column list of the statements that read messages (Columns) and
// the destinations of a positional scan (ScanDest) come from this one list,
// so they cannot disagree.
var messageFields = []struct {
	col string
	ptr func(*Row) any
}{
	{"id", func(r *Row) any { return &r.ID }},
	{"sender_number_id", func(r *Row) any { return &r.SenderNumberID }},
	{"to_phone", func(r *Row) any { return &r.ToPhone }},
	{"recipient_user_id", func(r *Row) any { return &r.RecipientUserID }},
	{"conversation_id", func(r *Row) any { return &r.ConversationID }},
	{"message_id", func(r *Row) any { return &r.NetworkMessageID }},
	{"type", func(r *Row) any { return &r.Type }},
	{"content", func(r *Row) any { return &r.Content }},
	{"file_name", func(r *Row) any { return &r.FileName }},
	{"file_size", func(r *Row) any { return &r.FileSize }},
	{"file_type", func(r *Row) any { return &r.FileType }},
	{"duration", func(r *Row) any { return &r.Duration }},
	{"status", func(r *Row) any { return &r.Status }},
	{"error_code", func(r *Row) any { return &r.ErrorCode }},
	{"error_message", func(r *Row) any { return &r.ErrorMessage }},
	{"client_reference", func(r *Row) any { return &r.ClientReference }},
	{"created_at", func(r *Row) any { return &r.CreatedAt }},
	{"sent_at", func(r *Row) any { return &r.SentAt }},
	{"delivered_at", func(r *Row) any { return &r.DeliveredAt }},
	{"failed_at", func(r *Row) any { return &r.FailedAt }},
	{"dispatched_at", func(r *Row) any { return &r.DispatchedAt }},
	{"updated_at", func(r *Row) any { return &r.UpdatedAt }},
	{"direction", func(r *Row) any { return &r.Direction }},
	{"from_phone", func(r *Row) any { return &r.FromPhone }},
	{"read_at", func(r *Row) any { return &r.ReadAt }},
	{"received_at", func(r *Row) any { return &r.ReceivedAt }},
	{"template_id", func(r *Row) any { return &r.TemplateID }},
	{"template_ref", func(r *Row) any { return &r.TemplateRef }},
	{"campaign_id", func(r *Row) any { return &r.CampaignID }},
	{"send_at", func(r *Row) any { return &r.SendAt }},
	{"canceled_at", func(r *Row) any { return &r.CanceledAt }},
}

// Columns lists a message row's columns of the messages table aliased m
// (m.id, m.sender_number_id, ...), in ScanDest's order.
var Columns = ColumnsOf("m")

// ColumnsOf lists a message row's columns of the messages table (or of a
// statement's result with its columns) aliased alias.
func ColumnsOf(alias string) string {
	cols := make([]string, len(messageFields))
	for i, f := range messageFields {
		cols[i] = alias + "." + f.col
	}
	return strings.Join(cols, ", ")
}

// ScanDest returns the destinations of r's columns in Columns order.
func (r *Row) ScanDest() []any {
	dest := make([]any, len(messageFields))
	for i, f := range messageFields {
		dest[i] = f.ptr(r)
	}
	return dest
}

// message is the row as callers see it.
func (r *Row) message() Message { return r.Message }

// Day is the UTC calendar day of t as the database's date type reads it:
// the day of a message's daily_usage counters is its acceptance's.
func Day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// ReserveSQL is the daily-limit reservation of a batch statement of tenant
// schema sc (acceptance's and delivery's), on the counter column of its
// side's daily_usage rows (used on 'accept', dispatched on 'deliver'): for
// each sender (want's column sender) and day of the statement's CTE want (n
// messages, limit lim), the counter goes up by n only while it stays within
// lim, all or none. It is two steps, c and u, named in the statement:
//
//   - c locks the rows of want in sender and day order, so that concurrent
//     batches cannot deadlock;
//   - u raises them, and only when c found every row of want (a day's first
//     message of a sender finds none: the statement then changes no counter,
//     its caller creates the missing rows, CreateCountersSQL, and runs it
//     again). It returns the sender_number_id and day of each row reserved
//     on.
//
// An UPDATE, not an INSERT ... ON CONFLICT: Citus routes a statement whose
// CTEs modify only by UPDATE or DELETE to the tenant's node alone (a router
// plan), and plans one with an INSERT step through the coordinator, sending
// its intermediate results to every worker (docs/scaling.md, §A worker node
// down).
func ReserveSQL(sc, side, counter, sender string) string {
	return `c AS (
	  SELECT d.sender_number_id, d.day FROM ` + sc + `.daily_usage d
	    JOIN want w ON d.sender_number_id = w.` + sender + ` AND d.day = w.day
	   WHERE d.side = '` + side + `'
	   ORDER BY d.sender_number_id, d.day FOR UPDATE OF d),
	u AS (
	  UPDATE ` + sc + `.daily_usage d SET ` + counter + ` = d.` + counter + ` + w.n, bound = w.lim
	    FROM want w
	   WHERE d.sender_number_id = w.` + sender + ` AND d.day = w.day AND d.side = '` + side + `'
	     AND d.` + counter + ` + w.n <= w.lim
	     AND (SELECT count(*) FROM c) = (SELECT count(*) FROM want)
	  RETURNING d.sender_number_id, d.day)`
}

// MissingCountersSQL is, in a statement with ReserveSQL's steps, whether
// want holds a sender and day whose counter row c did not find (ReserveSQL
// then reserved nothing).
const MissingCountersSQL = `(SELECT count(*) FROM c) <> (SELECT count(*) FROM want)`

// CreateCounters is the statement, and its arguments, that creates the
// daily_usage rows of side (accept or deliver) of tenant schema sc that
// are missing, for senders sids[i] on days days[i] ('YYYY-MM-DD'), with
// nothing counted: a counter statement that found one missing
// (ReserveSQL, and the one-message statements) runs again after it. An
// existing row is left as it is. The rows are inserted in sender and day
// order, each pair once, so that concurrent creators lock them in one
// order. A multi-row VALUES: Citus routes it to the tenant's node alone,
// where it sends an INSERT ... SELECT FROM unnest(...) of the arrays
// through the coordinator, in a two-phase commit (docs/scaling.md,
// §Two-phase commits); Citus 13.2 cannot run one that joins the arrays
// with the schema's tables on the node (it sends it a broken filter,
// "IS NOT NULL" of no column).
func CreateCounters(sc, side string, sids []int64, days []string) (string, []any) {
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
	var q strings.Builder
	q.WriteString(`INSERT INTO ` + sc + `.daily_usage AS d (sender_number_id, day, side) VALUES `)
	args := make([]any, 0, 2*len(pairs))
	for i, p := range pairs {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("($" + strconv.Itoa(2*i+1) + "::bigint, $" + strconv.Itoa(2*i+2) + "::date, '" + side + "')")
		args = append(args, p.sid, p.day)
	}
	q.WriteString(` ON CONFLICT (sender_number_id, day, side) DO NOTHING`)
	return q.String(), args
}

func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
