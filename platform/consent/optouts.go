package consent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/audit"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/page"
	"github.com/bizmsg/platform/platform/phone"
	"github.com/bizmsg/platform/platform/sqlq"
	"github.com/bizmsg/platform/platform/webhooks"
)

// Actor is who changes the list through the API or the dashboard: the
// member (UserID) and the API key they act through (KeyID, 0 on the
// dashboard). It is written to the audit log.
type Actor struct {
	UserID int64
	KeyID  int64
}

// AddRequest puts a phone on the list by request (POST /api/v1/opt-outs,
// the dashboard).
type AddRequest struct {
	Phone string
	// Note is optional (≤ MaxNoteLength characters, no control characters).
	Note string
	// Source is SourceAPI or SourceDashboard.
	Source string
}

// Add puts req.Phone on organization t's opt-out list, and reports whether
// it was added (false: it was on the list already, and the entry is the
// existing one, unchanged). An addition records contact.opted_out and an
// audit entry (opt_out.add) in its transaction (the entry through the job
// outbox, applied before Add returns: audit.go). Errors: 422 with every
// field error.
func (s *Service) Add(ctx context.Context, t db.Tenant, by Actor, req AddRequest) (Entry, bool, error) {
	e, err := req.entry()
	if err != nil {
		return Entry{}, false, err
	}
	e.CreatedAt = clock.Stamp(s.clock.Now())
	var added bool
	err = db.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		var err error
		if e, added, err = s.optOut(ctx, tx, t, e); err != nil || !added {
			return err
		}
		return s.audit(ctx, tx, t, by, audit.ActionOptOutAdd, e)
	})
	if err != nil {
		return Entry{}, false, err
	}
	if added {
		s.flush(ctx, t)
	}
	return e, added, nil
}

// entry validates req (422 with every field error) and returns its entry,
// without a time.
func (req AddRequest) entry() (Entry, error) {
	var v apperr.Validation
	p := phone.Required(&v, "phone", req.Phone)
	note := v.TrimmedText("note", req.Note, MaxNoteLength)
	if err := v.Err(); err != nil {
		return Entry{}, err
	}
	if req.Source != SourceAPI && req.Source != SourceDashboard {
		return Entry{}, fmt.Errorf("consent: add by source %q", req.Source)
	}
	e := Entry{Phone: p, Source: req.Source}
	if note != "" {
		e.Note = &note
	}
	return e, nil
}

// Remove takes phone off organization t's list (an opt-in by request):
// contact.opted_in and an audit entry (opt_out.remove) are recorded in its
// transaction (the entry as Add's). Errors: 404 when the phone is not on the list; 422 for a
// phone that is not one.
func (s *Service) Remove(ctx context.Context, t db.Tenant, by Actor, raw, source string) error {
	var v apperr.Validation
	p := phone.Required(&v, "phone", raw)
	if err := v.Err(); err != nil {
		return err
	}
	err := db.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		in := Entry{Phone: p, Source: source, CreatedAt: clock.Stamp(s.clock.Now())}
		old, found, err := s.optIn(ctx, tx, t, in)
		if err != nil {
			return err
		}
		if !found {
			return apperr.NotFound("opt-out")
		}
		return s.audit(ctx, tx, t, by, audit.ActionOptOutRemove, old)
	})
	if err != nil {
		return err
	}
	s.flush(ctx, t)
	return nil
}

// optOut puts e on the list in tx, under the phone's exclusive lock, and
// records contact.opted_out; added is false (and the entry the stored one)
// when the phone was on the list already.
func (s *Service) optOut(ctx context.Context, tx pgx.Tx, t db.Tenant, e Entry) (Entry, bool, error) {
	if err := s.lock(ctx, tx, t, e.Phone); err != nil {
		return Entry{}, false, err
	}
	rows, err := s.query(ctx, tx, t, "opt_out", sqlq.Args{"phone": e.Phone, "source": e.Source, "keyword": e.Keyword,
		"sender_number_id": e.SenderNumberID, "note": e.Note, "created_at": e.CreatedAt})
	if err != nil {
		return Entry{}, false, fmt.Errorf("opt out: %w", err)
	}
	stored, err := pgx.CollectRows(rows, scanEntry)
	if err != nil {
		return Entry{}, false, fmt.Errorf("opt out: %w", err)
	}
	if len(stored) == 0 {
		old, err := s.get(ctx, tx, t, e.Phone)
		return old, false, err
	}
	return stored[0], true, s.emit(ctx, tx, t, webhooks.EventContactOptedOut, stored[0])
}

// optIn takes in.Phone off the list in tx, under the phone's exclusive
// lock, and records contact.opted_in with in (how and when the phone came
// back); found is false when it was not on the list. It returns the entry
// removed.
func (s *Service) optIn(ctx context.Context, tx pgx.Tx, t db.Tenant, in Entry) (Entry, bool, error) {
	if err := s.lock(ctx, tx, t, in.Phone); err != nil {
		return Entry{}, false, err
	}
	rows, err := s.query(ctx, tx, t, "opt_in", sqlq.Args{"phone": in.Phone})
	if err != nil {
		return Entry{}, false, fmt.Errorf("opt in: %w", err)
	}
	old, err := pgx.CollectRows(rows, scanEntry)
	if err != nil {
		return Entry{}, false, fmt.Errorf("opt in: %w", err)
	}
	if len(old) == 0 {
		return Entry{}, false, nil
	}
	return old[0], true, s.emit(ctx, tx, t, webhooks.EventContactOptedIn, in)
}

// emit records an opt-out event about e in tx, ordered per phone.
func (s *Service) emit(ctx context.Context, tx pgx.Tx, t db.Tenant, typ string, e Entry) error {
	if s.events == nil {
		return nil
	}
	return s.events.Emit(ctx, tx, t, webhooks.Event{Type: typ, Key: "contact:" + e.Phone, Data: e, At: e.CreatedAt})
}

// scanEntry reads an entry's columns (queries/fragments/opt_out_entry.sql).
func scanEntry(r pgx.CollectableRow) (Entry, error) {
	var e Entry
	err := r.Scan(&e.ID, &e.Phone, &e.Source, &e.Keyword, &e.SenderNumberID, &e.Note, &e.CreatedAt)
	e.CreatedAt = e.CreatedAt.UTC()
	return e, err
}

// get reads phone's entry in tx.
func (s *Service) get(ctx context.Context, tx pgx.Tx, t db.Tenant, p string) (Entry, error) {
	rows, err := s.query(ctx, tx, t, "get", sqlq.Args{"phone": p})
	if err != nil {
		return Entry{}, fmt.Errorf("read opt-out: %w", err)
	}
	e, err := pgx.CollectExactlyOneRow(rows, scanEntry)
	if errors.Is(err, pgx.ErrNoRows) {
		return Entry{}, apperr.NotFound("opt-out")
	}
	if err != nil {
		return Entry{}, fmt.Errorf("read opt-out: %w", err)
	}
	return e, nil
}

// entryRow is the bun model of a tenant's opt_outs table, as List reads
// it: an Entry, whose tags name its columns.
type entryRow struct {
	bun.BaseModel `bun:"table:opt_outs,alias:o"`
	Entry
}

// ListQuery filters the list: Phone and Source as given (validated by
// List), and the page.
type ListQuery struct {
	Phone, Source, Limit, Cursor string
}

// listFilter is a validated ListQuery.
type listFilter struct {
	page          page.Query
	phone, source *string
}

// parse validates q: 422 naming every bad parameter.
func (q ListQuery) parse() (listFilter, error) {
	var v apperr.Validation
	f := listFilter{page: page.ParseInto(&v, q.Limit, q.Cursor)}
	if strings.TrimSpace(q.Phone) != "" {
		n, err := phone.Normalize(q.Phone)
		if err != nil {
			v.Add("phone", err.Error())
		}
		f.phone = &n
	}
	if q.Source != "" {
		if q.Source != SourceKeyword && q.Source != SourceAPI && q.Source != SourceDashboard {
			v.Add("source", "must be keyword, api or dashboard")
		}
		f.source = &q.Source
	}
	if err := v.Err(); err != nil {
		return listFilter{}, err
	}
	return f, nil
}

// List returns organization t's opt-out list, newest first, one page at a
// time. Errors: 422 naming every bad parameter.
func (s *Service) List(ctx context.Context, t db.Tenant, q ListQuery) (page.Of[Entry], error) {
	f, err := q.parse()
	if err != nil {
		return page.Of[Entry]{}, err
	}
	var rows []entryRow
	sel := s.db.Bun.NewSelect().Model(&rows).ModelTableExpr(t.TableAs("opt_outs", "o"))
	if f.page.After > 0 {
		sel = sel.Where("o.id < ?", f.page.After)
	}
	if f.phone != nil {
		sel = sel.Where("o.phone = ?", *f.phone)
	}
	if f.source != nil {
		sel = sel.Where("o.source = ?", *f.source)
	}
	if err := sel.OrderExpr("o.id DESC").Limit(int64(f.page.Limit) + 1).Scan(ctx); err != nil {
		return page.Of[Entry]{}, fmt.Errorf("list opt-outs: %w", err)
	}
	list := make([]Entry, len(rows))
	for i, r := range rows {
		list[i] = r.Entry
		list[i].CreatedAt = r.CreatedAt.UTC()
	}
	items, next := page.Cut(f.page, list, func(e Entry) int64 { return e.ID })
	return page.Of[Entry]{Items: items, NextCursor: next}, nil
}

// Contact is what organization t knows of a phone.
type Contact struct {
	// OptedOut: the phone is on the opt-out list.
	OptedOut bool
	// LastInbound is when the phone last wrote to the sender asked about
	// (nil: never, or no sender asked about).
	LastInbound *time.Time
}

// Contact reads whether phone p is on organization t's list and, for
// senderID > 0, when it last wrote to that sender number: the lookup's
// opted_out and service window, as of now (a send asks inside its
// acceptance statement).
func (s *Service) Contact(ctx context.Context, t db.Tenant, p string, senderID int64) (Contact, error) {
	var c Contact
	err := s.q.Raw(s.db.Bun, "contact", sqlq.Args{"schema": t.SchemaIdent(), "phone": p, "sender_id": senderID}).
		Scan(ctx, &c.OptedOut, &c.LastInbound)
	if err != nil {
		return Contact{}, fmt.Errorf("read contact: %w", err)
	}
	return c, nil
}
