package templates

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/page"
	"github.com/bizmsg/platform/platform/queue"
)

// columns is the select list of scan, in the alias t.
const columns = `t.id, t.name, t.language, t.category, t.header, t.body, t.footer, t.variables, t.examples::text,
	t.status, coalesce(t.rejected_reason, ''), t.created_at, t.updated_at`

func scan(r db.Rows, tpl *Template) error {
	var status, examples string
	err := r.Scan(&tpl.ID, &tpl.Name, &tpl.Language, &tpl.Category, &tpl.Header, &tpl.Body, &tpl.Footer,
		&tpl.Variables, &examples, &status, &tpl.RejectedReason, &tpl.CreatedAt, &tpl.UpdatedAt)
	if err != nil {
		return err
	}
	tpl.Status = Status(status)
	if err := json.Unmarshal([]byte(examples), &tpl.Examples); err != nil {
		return fmt.Errorf("template %d: examples: %w", tpl.ID, err)
	}
	return nil
}

// Create validates in (Validate) and adds the template to the
// organization, pending, with its submission to the network for review
// (a queue.TemplateReviewArgs job) in the same transaction. A template of
// the same name and language is a 409 template_exists.
func (s *Service) Create(ctx context.Context, t db.Tenant, in Input) (Template, error) {
	tpl, err := Validate(in)
	if err != nil {
		return Template{}, err
	}
	examples, err := json.Marshal(tpl.Examples)
	if err != nil {
		return Template{}, fmt.Errorf("encode examples: %w", err)
	}
	now := s.clock.Now()
	tpl.CreatedAt, tpl.UpdatedAt = now, now
	err = s.sql.Tx(ctx, func(tx pgx.Tx) error {
		found, err := s.sql.QueryFirst(ctx, tx, sqlFor(t, `INSERT INTO {templates}
			(name, language, category, header, body, footer, variables, examples, status, created_at, updated_at)
			VALUES ($1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text[], $8::jsonb, $9::text,
			        $10::timestamptz, $10::timestamptz)
			ON CONFLICT ON CONSTRAINT templates_name_language_key DO NOTHING
			RETURNING id`),
			[]any{tpl.Name, tpl.Language, tpl.Category, tpl.Header, tpl.Body, tpl.Footer, tpl.Variables, string(examples),
				string(tpl.Status), now},
			func(r db.Rows) error { return r.Scan(&tpl.ID) })
		switch {
		case err != nil:
			return fmt.Errorf("insert template: %w", err)
		case !found:
			return apperr.Conflict(CodeTemplateExists,
				fmt.Sprintf("The organization already has a template named %s in %s.", tpl.Name, tpl.Language))
		}
		if _, err := s.jobs.InsertTx(ctx, tx, queue.TemplateReviewArgs{TenantRef: queue.RefOf(t), TemplateID: tpl.ID}, nil); err != nil {
			return fmt.Errorf("queue review of template %d: %w", tpl.ID, err)
		}
		return nil
	})
	if err != nil {
		return Template{}, err
	}
	return tpl, nil
}

// ListQuery is the query of GET /templates: filters (empty: any) and
// paging.
type ListQuery struct {
	// Status and Category filter exactly; Name filters the exact name.
	Status   string
	Category string
	Name     string
	Limit    string
	Cursor   string
}

// List returns one page of the organization's templates, newest first. An
// unknown status or category, or a bad limit or cursor, is a validation
// error naming each.
func (s *Service) List(ctx context.Context, t db.Tenant, q ListQuery) (page.Of[Template], error) {
	var v apperr.Validation
	p := page.ParseInto(&v, q.Limit, q.Cursor)
	if q.Status != "" && !slices.Contains(Statuses(), Status(q.Status)) {
		v.Add("status", "must be one of pending, approved, rejected, paused, disabled")
	}
	if problem := checkCategory(q.Category); q.Category != "" && problem != "" {
		v.Add("category", problem)
	}
	if err := v.Err(); err != nil {
		return page.Of[Template]{}, err
	}
	var list []Template
	err := s.sql.Query(ctx, nil, sqlFor(t, `SELECT `+columns+` FROM {templates} t
		WHERE ($1::bigint = 0 OR t.id < $1) AND ($2::text = '' OR t.status = $2)
		  AND ($3::text = '' OR t.category = $3) AND ($4::text = '' OR t.name = $4)
		ORDER BY t.id DESC LIMIT $5`),
		[]any{p.After, q.Status, q.Category, q.Name, p.Limit + 1}, func(r db.Rows) error {
			for r.Next() {
				var tpl Template
				if err := scan(r, &tpl); err != nil {
					return err
				}
				list = append(list, tpl)
			}
			return nil
		})
	if err != nil {
		return page.Of[Template]{}, fmt.Errorf("list templates: %w", err)
	}
	items, next := page.Cut(p, list, func(tpl Template) int64 { return tpl.ID })
	return page.Of[Template]{Items: items, NextCursor: next}, nil
}

// Get returns the organization's template id (404 when it has none).
func (s *Service) Get(ctx context.Context, t db.Tenant, id int64) (Template, error) {
	return s.load(ctx, nil, t, id, false)
}

// load reads template id, locking it FOR UPDATE in tx when lock is set.
func (s *Service) load(ctx context.Context, tx pgx.Tx, t db.Tenant, id int64, lock bool) (Template, error) {
	if id <= 0 {
		return Template{}, errNotFound()
	}
	q := `SELECT ` + columns + ` FROM {templates} t WHERE t.id = $1`
	if lock {
		q += ` FOR UPDATE`
	}
	var tpl Template
	found, err := s.sql.QueryFirst(ctx, tx, sqlFor(t, q), []any{id}, func(r db.Rows) error { return scan(r, &tpl) })
	switch {
	case err != nil:
		return Template{}, fmt.Errorf("read template %d: %w", id, err)
	case !found:
		return Template{}, errNotFound()
	}
	return tpl, nil
}

// Delete removes the template. Messages sent with it keep their content
// and template_id.
func (s *Service) Delete(ctx context.Context, t db.Tenant, id int64) error {
	if id <= 0 {
		return errNotFound()
	}
	found, err := s.sql.QueryFirst(ctx, nil, sqlFor(t, `DELETE FROM {templates} WHERE id = $1 RETURNING id`), []any{id},
		func(r db.Rows) error { var gone int64; return r.Scan(&gone) })
	switch {
	case err != nil:
		return fmt.Errorf("delete template %d: %w", id, err)
	case !found:
		return errNotFound()
	}
	return nil
}

// Resolve returns the organization's template named name in language, for
// a send: 422 template_not_found when there is none, 422
// template_not_approved when it is not approved. The acceptance of the send
// checks approval again in its own statement (a template paused meanwhile
// is refused there).
func (s *Service) Resolve(ctx context.Context, t db.Tenant, name, language string) (Template, error) {
	tpl, err := s.Existing(ctx, t, name, language)
	if err != nil {
		return Template{}, err
	}
	if tpl.Status != StatusApproved {
		return Template{}, ErrNotApproved(tpl.Name, tpl.Language, tpl.Status)
	}
	return tpl, nil
}

// ErrNotFoundForSend is the 422 template_not_found of a send naming no
// template of the organization.
func ErrNotFoundForSend(name, language string) error {
	return apperr.Invalid(CodeTemplateNotFound,
		fmt.Sprintf("The organization has no template named %q in language %q.", name, language))
}

// ErrNotApproved is the 422 template_not_approved of a send naming a
// template that is not approved (status says what it is; "" when unknown).
func ErrNotApproved(name, language string, status Status) error {
	msg := fmt.Sprintf("The template %s (%s) is not approved for sending", name, language)
	if status != "" {
		msg += ": it is " + string(status)
	}
	return apperr.Invalid(CodeTemplateNotApproved, msg+".")
}

func errNotFound() error { return apperr.NotFound("template") }
