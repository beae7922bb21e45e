package templates

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/uptrace/bun"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/page"
	"github.com/bizmsg/platform/platform/queue"
)

// table names the organization's templates table for a bun query on the
// model Template (alias t).
func table(t db.Tenant) (string, bun.Ident, bun.Ident) { return t.TableAs("templates", "t") }

// insertColumns are the columns Create writes.
var insertColumns = []string{"name", "language", "category", "header", "body", "footer", "variables", "examples",
	"status", "created_at", "updated_at"}

// Create validates in (Validate) and adds the template to the
// organization, pending, with its submission to the network for review
// (a queue.TemplateReviewArgs job) in the same transaction. A template of
// the same name and language is a 409 template_exists.
func (s *Service) Create(ctx context.Context, t db.Tenant, in Input) (Template, error) {
	tpl, err := Validate(in)
	if err != nil {
		return Template{}, err
	}
	if tpl.Variables == nil {
		tpl.Variables = []string{}
	}
	if tpl.Examples == nil {
		tpl.Examples = map[string]string{}
	}
	now := s.clock.Now()
	tpl.CreatedAt, tpl.UpdatedAt = now, now
	err = s.db.RunInTx(ctx, func(tx db.Tx) error {
		res, err := tx.Bun.NewInsert().Model(&tpl).ModelTableExpr(table(t)).Column(insertColumns...).
			On("CONFLICT ON CONSTRAINT templates_name_language_key DO NOTHING").Returning("id").Exec(ctx)
		if err != nil {
			return fmt.Errorf("insert template: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("insert template: %w", err)
		} else if n == 0 {
			return apperr.Conflict(CodeTemplateExists,
				fmt.Sprintf("The organization already has a template named %s in %s.", tpl.Name, tpl.Language))
		}
		if _, err := s.jobs.InsertTx(ctx, tx.Pgx(), queue.TemplateReviewArgs{TenantRef: queue.RefOf(t), TemplateID: tpl.ID}, nil); err != nil {
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
	sel := p.Select(s.db.Bun.NewSelect().Model(&list).ModelTableExpr(table(t)), "t.id")
	if q.Status != "" {
		sel.Where("t.status = ?", q.Status)
	}
	if q.Category != "" {
		sel.Where("t.category = ?", q.Category)
	}
	if q.Name != "" {
		sel.Where("t.name = ?", q.Name)
	}
	if err := sel.Scan(ctx); err != nil {
		return page.Of[Template]{}, fmt.Errorf("list templates: %w", err)
	}
	items, next := page.Cut(p, list, func(tpl Template) int64 { return tpl.ID })
	return page.Of[Template]{Items: items, NextCursor: next}, nil
}

// Get returns the organization's template id (404 when it has none).
func (s *Service) Get(ctx context.Context, t db.Tenant, id int64) (Template, error) {
	return s.load(ctx, s.db.Bun, t, id, false)
}

// load reads template id on idb (the database or a transaction), locking
// it FOR UPDATE when lock is set.
func (s *Service) load(ctx context.Context, idb bun.IDB, t db.Tenant, id int64, lock bool) (Template, error) {
	if id <= 0 {
		return Template{}, errNotFound()
	}
	var tpl Template
	sel := idb.NewSelect().Model(&tpl).ModelTableExpr(table(t)).Where("t.id = ?", id)
	if lock {
		sel.For("UPDATE")
	}
	err := sel.Scan(ctx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Template{}, errNotFound()
	case err != nil:
		return Template{}, fmt.Errorf("read template %d: %w", id, err)
	}
	return tpl, nil
}

// Delete removes the template. Messages sent with it keep their content
// and template_id.
func (s *Service) Delete(ctx context.Context, t db.Tenant, id int64) error {
	if id <= 0 {
		return errNotFound()
	}
	res, err := s.db.Bun.NewDelete().Model((*Template)(nil)).ModelTableExpr(table(t)).Where("t.id = ?", id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("delete template %d: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("delete template %d: %w", id, err)
	} else if n == 0 {
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
