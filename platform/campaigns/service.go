package campaigns

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/page"
	"github.com/bizmsg/platform/platform/phone"
	"github.com/bizmsg/platform/platform/sqlq"
	"github.com/bizmsg/platform/platform/templates"
)

// Create validates req and stores the campaign, a draft without
// recipients. Errors: 422 validation_failed naming every bad field (a
// sender number id the organization does not have under
// sender_number_ids), 422 template_not_found when the organization has no
// template of that name and language (in any status: approval is needed
// at start).
func (s *Service) Create(ctx context.Context, t db.Tenant, req *CreateRequest) (Campaign, error) {
	now := s.clock.Now()
	sp, err := req.validate(now)
	if err != nil {
		return Campaign{}, err
	}
	statuses, err := s.senderStatuses(ctx, nil, t, sp.senders)
	if err != nil {
		return Campaign{}, err
	}
	var v apperr.Validation
	for _, id := range sp.senders {
		if _, ok := statuses[id]; !ok {
			v.Add("sender_number_ids", fmt.Sprintf("%d is not a sender number of the organization", id))
		}
	}
	if err := v.Err(); err != nil {
		return Campaign{}, err
	}
	var tplID *int64
	if sp.template != nil {
		tpl, found, err := s.templates.Find(ctx, t, sp.template.Name, sp.template.Language)
		if err != nil {
			return Campaign{}, err
		}
		if !found {
			return Campaign{}, templates.ErrNotFoundForSend(sp.template.Name, sp.template.Language)
		}
		tplID = &tpl.ID
	}
	var tplName, tplLang, content *string
	if sp.template != nil {
		tplName, tplLang = &sp.template.Name, &sp.template.Language
	} else {
		content = &sp.body.Content
	}
	rows, err := s.query(ctx, s.db.Pool, t, "insert_campaign", sqlq.Args{
		"name": sp.name, "sender_number_ids": sp.senders, "template_id": tplID, "template_name": tplName,
		"template_language": tplLang, "type": sp.body.Type, "content": content, "file_name": sp.body.FileName,
		"file_size": sp.body.FileSize, "file_type": sp.body.FileType, "duration": sp.body.Duration,
		"send_at": sp.sendAt, "reserve_percent": sp.reservePercent, "now": now,
	})
	if err != nil {
		return Campaign{}, fmt.Errorf("insert campaign: %w", err)
	}
	c, err := pgx.CollectExactlyOneRow(rows, scanCampaign)
	if err != nil {
		return Campaign{}, fmt.Errorf("insert campaign: %w", err)
	}
	c.SkipReasons = map[string]int{}
	return c, nil
}

// senderStatuses reads the statuses of the organization's sender numbers
// among ids (in tx, or on the pool when tx is nil); an id it does not
// have is not in the map.
func (s *Service) senderStatuses(ctx context.Context, tx pgx.Tx, t db.Tenant, ids []int64) (map[int64]string, error) {
	rows, err := s.query(ctx, s.on(tx), t, "sender_statuses", sqlq.Args{"ids": ids})
	if err != nil {
		return nil, fmt.Errorf("read sender numbers: %w", err)
	}
	out := make(map[int64]string, len(ids))
	var (
		id     int64
		status string
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &status}, func() error { out[id] = status; return nil }); err != nil {
		return nil, fmt.Errorf("read sender numbers: %w", err)
	}
	return out, nil
}

// Get returns the organization's campaign id with its counts (404 when it
// has none).
func (s *Service) Get(ctx context.Context, t db.Tenant, id int64) (Campaign, error) {
	c, err := s.load(ctx, nil, t, id, false)
	if err != nil {
		return Campaign{}, err
	}
	list := []Campaign{c}
	if err := s.withCounts(ctx, nil, t, list); err != nil {
		return Campaign{}, err
	}
	return list[0], nil
}

// ListQuery is the query of GET /campaigns: a status filter (empty: any)
// and paging.
type ListQuery struct {
	Status, Limit, Cursor string
}

// List returns one page of the organization's campaigns, newest first,
// with their counts. An unknown status, or a bad limit or cursor, is a
// 422 naming each.
func (s *Service) List(ctx context.Context, t db.Tenant, q ListQuery) (page.Of[Campaign], error) {
	var v apperr.Validation
	p := page.ParseInto(&v, q.Limit, q.Cursor)
	if q.Status != "" && !slices.Contains(Statuses(), Status(q.Status)) {
		v.Add("status", "must be one of draft, scheduled, running, paused, completed, canceled")
	}
	if err := v.Err(); err != nil {
		return page.Of[Campaign]{}, err
	}
	rows, err := s.query(ctx, s.db.Pool, t, "list_campaigns", sqlq.Args{"after": p.After, "status": q.Status, "limit": p.Limit + 1})
	if err != nil {
		return page.Of[Campaign]{}, fmt.Errorf("list campaigns: %w", err)
	}
	list, err := pgx.CollectRows(rows, scanCampaign)
	if err != nil {
		return page.Of[Campaign]{}, fmt.Errorf("list campaigns: %w", err)
	}
	items, next := page.Cut(p, list, func(c Campaign) int64 { return c.ID })
	if err := s.withCounts(ctx, nil, t, items); err != nil {
		return page.Of[Campaign]{}, err
	}
	return page.Of[Campaign]{Items: items, NextCursor: next}, nil
}

// Invalid is a recipient row that was not added, and why.
type Invalid struct {
	Row   int    `json:"row"`
	Phone string `json:"phone"`
	Error string `json:"error"`
}

// Added is the outcome of adding recipients: how many were added, how many
// were phones given twice in the request or already in the campaign, and
// the rows that were invalid.
type Added struct {
	Added      int       `json:"added"`
	Duplicates int       `json:"duplicates"`
	Invalid    []Invalid `json:"invalid"`
}

// AddRecipients adds the recipients of body (DecodeRecipients: JSON or
// CSV of media type contentType) to campaign id, in their order, in one
// statement. A row with an invalid phone, client_reference or variables
// (for a template campaign: every variable of the template and no other;
// a plain campaign takes none) is not added and is reported with its row
// number; a phone given twice, or one the campaign has, counts as a
// duplicate. Errors: 404; 409 campaign_state unless the campaign is a
// draft; 422 campaign_recipient_limit, nothing added, when the campaign
// would pass MaxRecipients; DecodeRecipients' errors.
func (s *Service) AddRecipients(ctx context.Context, t db.Tenant, id int64, contentType string, body []byte) (Added, error) {
	c, err := s.load(ctx, nil, t, id, false)
	if err != nil {
		return Added{}, err
	}
	if c.Status != StatusDraft {
		return Added{}, errState(c, "adding recipients (only a draft takes them)")
	}
	rows, err := DecodeRecipients(contentType, body)
	if err != nil {
		return Added{}, err
	}
	var tpl *templates.Template
	if c.TemplateID != nil {
		got, err := s.templates.Get(ctx, t, *c.TemplateID)
		if e, ok := apperr.As(err); ok && e.Kind == apperr.KindNotFound {
			return Added{}, templates.ErrNotFoundForSend(c.Template.Name, c.Template.Language)
		}
		if err != nil {
			return Added{}, err
		}
		tpl = &got
	}
	batch, out := checkRows(rows, tpl)
	err = db.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		c, err := s.load(ctx, tx, t, id, true)
		if err != nil {
			return err
		}
		if c.Status != StatusDraft {
			return errState(c, "adding recipients (only a draft takes them)")
		}
		added, err := s.addRecipients(ctx, tx, t, id, batch)
		if err != nil {
			return fmt.Errorf("add recipients to campaign %d: %w", id, err)
		}
		out.Added, out.Duplicates = added, out.Duplicates+len(batch.phones)-added
		var total int
		rows, err := s.query(ctx, tx, t, "count_recipients", sqlq.Args{"id": id, "added": added, "now": s.clock.Now()})
		if err == nil {
			total, err = pgx.CollectExactlyOneRow(rows, pgx.RowTo[int])
		}
		if err != nil {
			return fmt.Errorf("count recipients of campaign %d: %w", id, err)
		}
		if total > MaxRecipients {
			return apperr.Invalid(CodeRecipientLimit, fmt.Sprintf(
				"A campaign has at most %d recipients: this one has %d, and the request would add %d. Nothing was added.",
				MaxRecipients, total-added, added))
		}
		return nil
	})
	if err != nil {
		return Added{}, err
	}
	return out, nil
}

// batch is the valid recipients of a request, as the statement takes
// them: phones, variables (JSON text, nil for none) and client
// references (nil for none), in order.
type batch struct {
	phones    []string
	variables []*string
	refs      []*string
}

// checkRows validates rows for a campaign with template tpl (nil: a plain
// campaign): the valid ones, each phone once, in the batch; the others
// in out.Invalid, and the phones given twice counted in out.Duplicates.
func checkRows(rows []Row, tpl *templates.Template) (batch, Added) {
	var (
		b    batch
		out  = Added{Invalid: []Invalid{}}
		seen = make(map[string]bool, len(rows))
	)
	for _, r := range rows {
		p, problem := checkRow(r, tpl)
		switch {
		case problem != "":
			out.Invalid = append(out.Invalid, Invalid{Row: r.N, Phone: r.Phone, Error: problem})
		case seen[p]:
			out.Duplicates++
		default:
			seen[p] = true
			b.phones = append(b.phones, p)
			b.variables = append(b.variables, encodeVariables(r.Variables))
			b.refs = append(b.refs, optional(r.ClientReference))
		}
	}
	return b, out
}

// checkRow validates one row: its phone, normalised, or why the row is
// invalid.
func checkRow(r Row, tpl *templates.Template) (string, string) {
	if r.Problem != "" {
		return "", r.Problem
	}
	if strings.TrimSpace(r.Phone) == "" {
		return "", "phone is required"
	}
	p, err := phone.Normalize(r.Phone)
	if err != nil {
		return "", "phone " + err.Error()
	}
	var v apperr.Validation
	if r.ClientReference != "" && !v.Text("client_reference", r.ClientReference, messages.MaxClientReferenceLength) {
		return "", "client_reference " + fieldProblems(v.Err())
	}
	if tpl == nil {
		if len(r.Variables) > 0 {
			return "", "variables are only for template campaigns"
		}
		return p, ""
	}
	text, err := templates.Render(*tpl, r.Variables)
	if err != nil {
		return "", fieldProblems(err)
	}
	if utf8.RuneCountInString(text) > 4096 {
		return "", "variables make the message longer than 4096 characters"
	}
	return p, ""
}

// fieldProblems writes a validation error's field errors as one line,
// fields in order: "variables.1 is required: ...; variables.x is not ...".
func fieldProblems(err error) string {
	e, ok := apperr.As(err)
	if !ok || len(e.Fields) == 0 {
		return err.Error()
	}
	names := make([]string, 0, len(e.Fields))
	for f := range e.Fields {
		names = append(names, f)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, f := range names {
		name := strings.TrimPrefix(f, "template.")
		if name == "client_reference" {
			name = ""
		}
		parts = append(parts, strings.TrimSpace(name+" "+strings.Join(e.Fields[f], ", ")))
	}
	return strings.Join(parts, "; ")
}

// encodeVariables is vars as the statement takes them: JSON text, nil for
// none.
func encodeVariables(vars map[string]string) *string {
	if len(vars) == 0 {
		return nil
	}
	b, err := json.Marshal(vars)
	if err != nil {
		// A map of strings always encodes.
		panic(fmt.Sprintf("campaigns: encode variables: %v", err))
	}
	s := string(b)
	return &s
}

// optional is s as a nullable column's value: nil when "".
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
