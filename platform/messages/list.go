package messages

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/page"
	"github.com/bizmsg/platform/platform/phone"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/sqlq"
)

// Page bounds of the history (docs/api.md, §Conventions: lists).
const (
	DefaultPageLimit = 25
	MaxPageLimit     = 100
)

// MaxClientReferenceLength bounds a message's client_reference: at a send
// (package acceptance) and in the history's filter.
const MaxClientReferenceLength = 128

// ListQuery is a history request as it arrives: raw query parameters. Empty
// means "not given".
type ListQuery struct {
	Limit  string
	Cursor string
	// Filters.
	SenderNumberID  string
	ToPhone         string
	Status          string
	Type            string
	Since           string // RFC 3339, inclusive
	Until           string // RFC 3339, exclusive
	ClientReference string
	Direction       string // outbound or inbound
	ConversationID  string
	CampaignID      string
}

// ListQueryFrom reads a history request's query parameters (limit, cursor,
// sender_number_id, to_phone, status, type, since, until, client_reference,
// direction, conversation_id, campaign_id).
func ListQueryFrom(v url.Values) ListQuery {
	return ListQuery{
		Direction:       v.Get("direction"),
		ConversationID:  v.Get("conversation_id"),
		CampaignID:      v.Get("campaign_id"),
		Limit:           v.Get("limit"),
		Cursor:          v.Get("cursor"),
		SenderNumberID:  v.Get("sender_number_id"),
		ToPhone:         phone.FromQuery(v.Get("to_phone")),
		Status:          v.Get("status"),
		Type:            v.Get("type"),
		Since:           v.Get("since"),
		Until:           v.Get("until"),
		ClientReference: v.Get("client_reference"),
	}
}

// filter is a validated ListQuery.
type filter struct {
	limit           int
	after           *position // the previous page's last message; nil on the first page
	senderID        int64
	toPhone         string
	status          string
	typ             string
	since, until    *time.Time
	clientReference string
	direction       string
	conversationID  int64
	campaignID      int64
}

// Statuses returns every message status, outbound ones in the order of the
// lifecycle, then received, then canceled (a scheduled send's end).
func Statuses() []string {
	return []string{StatusScheduled, StatusQueued, StatusSent, StatusDelivered, StatusRead, StatusFailed,
		StatusReceived, StatusCanceled}
}

// parse validates every parameter and reports every problem at once (422).
func (q ListQuery) parse() (filter, error) {
	var v apperr.Validation
	f := filter{limit: DefaultPageLimit}
	if q.Limit != "" {
		n, err := strconv.Atoi(q.Limit)
		if err != nil || n < 1 || n > MaxPageLimit {
			v.Add("limit", fmt.Sprintf("must be an integer from 1 to %d", MaxPageLimit))
		}
		f.limit = n
	}
	if q.SenderNumberID != "" {
		f.senderID = v.PositiveInt("sender_number_id", q.SenderNumberID)
	}
	if q.ToPhone != "" {
		p, err := phone.Normalize(q.ToPhone)
		if err != nil {
			v.Add("to_phone", err.Error())
		}
		f.toPhone = p
	}
	if q.Status != "" {
		switch q.Status {
		case StatusScheduled, StatusQueued, StatusSent, StatusDelivered, StatusRead, StatusFailed, StatusReceived,
			StatusCanceled:
			f.status = q.Status
		default:
			v.Add("status", "must be one of "+strings.Join(Statuses(), ", "))
		}
	}
	if q.Direction != "" {
		switch q.Direction {
		case DirectionOutbound, DirectionInbound:
			f.direction = q.Direction
		default:
			v.Add("direction", "must be one of outbound, inbound")
		}
	}
	if q.ConversationID != "" {
		f.conversationID = v.PositiveInt("conversation_id", q.ConversationID)
	}
	if q.CampaignID != "" {
		f.campaignID = v.PositiveInt("campaign_id", q.CampaignID)
	}
	if q.Type != "" {
		switch q.Type {
		case TypeText, TypeImage, TypeVoice, TypeDocument, TypeTemplate:
			f.typ = q.Type
		default:
			v.Add("type", "must be one of text, image, voice, document, template")
		}
	}
	f.since = page.ParseTime(&v, "since", q.Since)
	f.until = page.ParseTime(&v, "until", q.Until)
	if f.since != nil && f.until != nil && !f.since.Before(*f.until) {
		v.Add("until", "must be after since")
	}
	if q.Cursor != "" {
		// A cursor belongs to the order of the list it came from: by time
		// when since or until is given, else by id.
		pos, ok := decodeCursor(q.Cursor)
		if !ok || pos.timed != f.byTime() {
			v.Add("cursor", "is not a cursor returned by this list with these filters")
		}
		f.after = &pos
	}
	if q.ClientReference != "" {
		// As a send's (no stored reference breaks the rule).
		v.Text("client_reference", q.ClientReference, MaxClientReferenceLength)
		f.clientReference = q.ClientReference
	}
	if err := v.Err(); err != nil {
		return filter{}, err
	}
	return f, nil
}

// byTime reports whether the list is ordered by creation time (a time
// filter is given, so the created_at index serves it) rather than by id.
func (f filter) byTime() bool { return f.since != nil || f.until != nil }

// List returns the organization's messages matching q, newest first, one
// page at a time. Each filter is served by an index of messages (sender,
// to_phone, status, client_reference and conversation, each with the id;
// inbound messages by id; created_at with the id), so a page costs the same
// with millions of rows: without a time filter the list is ordered by id
// (newest first), with since or until by (created_at, id), so the
// created_at index reads just the window instead of the newest rows down to
// it. direction=outbound has no index of its own: the primary key serves
// it while outbound messages are most of the rows.
func (s *Service) List(ctx context.Context, t db.Tenant, q ListQuery) (page.Of[Message], error) {
	f, err := q.parse()
	if err != nil {
		return page.Of[Message]{}, err
	}
	// The page is said with bun's builder, its values literals in the
	// text (run on the simple protocol), so Postgres plans each page for
	// its values (a custom plan): a prepared, generic plan could not tell a
	// rare status or sender from a common one, and would pick one index for
	// all.
	sel := s.bun.NewSelect().ColumnExpr(Columns).TableExpr(t.TableAs("messages", "m"))
	if f.byTime() {
		sel = sel.OrderExpr("m.created_at DESC, m.id DESC")
		if f.after != nil {
			sel = sel.Where("(m.created_at, m.id) < (?, ?)", f.after.at, f.after.id)
		}
	} else {
		sel = sel.OrderExpr("m.id DESC")
		if f.after != nil {
			sel = sel.Where("m.id < ?", f.after.id)
		}
	}
	for _, c := range []struct {
		on   bool
		expr string
		val  any
	}{
		{f.senderID > 0, "m.sender_number_id = ?", f.senderID},
		{f.toPhone != "", "m.to_phone = ?", f.toPhone},
		{f.status != "", "m.status = ?", f.status},
		{f.typ != "", "m.type = ?", f.typ},
		{f.since != nil, "m.created_at >= ?", f.since},
		{f.until != nil, "m.created_at < ?", f.until},
		{f.clientReference != "", "m.client_reference = ?", f.clientReference},
		{f.direction != "", "m.direction = ?", f.direction},
		{f.conversationID > 0, "m.conversation_id = ?", f.conversationID},
		{f.campaignID > 0, "m.campaign_id = ?", f.campaignID},
	} {
		if c.on {
			sel = sel.Where(c.expr, c.val)
		}
	}
	res, err := sel.Limit(int64(f.limit) + 1).Rows(ctx)
	if err != nil {
		return page.Of[Message]{}, fmt.Errorf("list messages: %w", err)
	}
	defer res.Close()
	var rows []Row
	for res.Next() {
		rows = append(rows, Row{})
		if err := res.Scan(rows[len(rows)-1].ScanDest()...); err != nil {
			return page.Of[Message]{}, fmt.Errorf("list messages: %w", err)
		}
	}
	if err := res.Err(); err != nil {
		return page.Of[Message]{}, fmt.Errorf("list messages: %w", err)
	}
	var p page.Of[Message]
	if len(rows) > f.limit {
		rows = rows[:f.limit]
		last := rows[len(rows)-1]
		p.NextCursor = encodeCursor(position{id: last.ID, at: last.CreatedAt, timed: f.byTime()})
	}
	p.Items = make([]Message, 0, len(rows))
	for i := range rows {
		p.Items = append(p.Items, rows[i].message())
	}
	return p, nil
}

// readRows runs named query name of tenant t, whose result is Columns, on
// a pool connection (db.Prepared) and returns its rows.
func (s *Service) readRows(ctx context.Context, t db.Tenant, name string, args sqlq.Args, capacity int) ([]Row, error) {
	rows := make([]Row, 0, capacity)
	err := s.prep.Named(ctx, nil, s.q, name, t.Quoted(), args, func(r db.Rows) error {
		for r.Next() {
			rows = append(rows, Row{})
			if err := r.Scan(rows[len(rows)-1].ScanDest()...); err != nil {
				return err
			}
		}
		return nil
	})
	return rows, err
}

// Get returns message id of the organization with the state of its
// delivery job (Message.Delivery, while River keeps it); 404 when there is
// none (also for another organization's id: it is not in this tenant's
// schema, and the job is looked up by this organization's id). An inbound
// message has no delivery job.
func (s *Service) Get(ctx context.Context, t db.Tenant, id int64) (Message, error) {
	if id <= 0 {
		return Message{}, apperr.NotFound("message")
	}
	rows, err := s.readRows(ctx, t, "get_message", sqlq.Args{"id": id}, 1)
	if err != nil {
		return Message{}, fmt.Errorf("load message %d: %w", id, err)
	}
	if len(rows) == 0 {
		return Message{}, apperr.NotFound("message")
	}
	m := rows[0].message()
	if m.Direction == DirectionInbound {
		return m, nil
	}
	job, err := queue.DeliveryJobOf(ctx, s.jobs, t.OrgID, id)
	if err != nil {
		return Message{}, err
	}
	if job != nil {
		rep := queue.ReportOf(job)
		if rep.State == queue.DeliveryDone && m.Status == StatusQueued {
			// Its job left it to the job that delivers the earlier message
			// of its conversation (docs/api.md, §Delivery order).
			rep.State, rep.NextAttemptAt = queue.DeliveryWaiting, nil
		}
		m.Delivery = &rep
	}
	return m, nil
}

// position is where a page ended: the last message's id and, for lists
// ordered by time, its creation time.
type position struct {
	id    int64
	at    time.Time
	timed bool
}

// Cursor formats, versioned by their prefix: "msg:<id>" for lists by id,
// "msgt:<unix microseconds>:<id>" for lists by time (created_at is stored to
// the microsecond, so the position is exact).
const (
	cursorPrefix     = "msg:"
	timeCursorPrefix = "msgt:"
)

func encodeCursor(p position) string {
	s := cursorPrefix + itoa(p.id)
	if p.timed {
		s = timeCursorPrefix + itoa(p.at.UnixMicro()) + ":" + itoa(p.id)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

func decodeCursor(s string) (position, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return position{}, false
	}
	var p position
	rest, ok := strings.CutPrefix(string(b), cursorPrefix)
	if !ok {
		if rest, ok = strings.CutPrefix(string(b), timeCursorPrefix); !ok {
			return position{}, false
		}
		micros, idPart, found := strings.Cut(rest, ":")
		us, err := strconv.ParseInt(micros, 10, 64)
		if !found || err != nil {
			return position{}, false
		}
		p.timed, p.at, rest = true, time.UnixMicro(us).UTC(), idPart
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || id <= 0 {
		return position{}, false
	}
	p.id = id
	// Only a cursor encodeCursor made: the decoder alone skips line breaks
	// and takes other spellings of the same position.
	if encodeCursor(p) != s {
		return position{}, false
	}
	return p, true
}
