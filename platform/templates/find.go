package templates

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
)

// Find returns the organization's template named name in language, in
// any status, and whether there is one: for a campaign, which names its
// template at creation and needs it approved only when it starts.
func (s *Service) Find(ctx context.Context, t db.Tenant, name, language string) (Template, bool, error) {
	var tpl Template
	err := s.db.Bun.NewSelect().Model(&tpl).ModelTableExpr(table(t)).
		Where("t.name = ?", name).Where("t.language = ?", language).Scan(ctx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Template{}, false, nil
	case err != nil:
		return Template{}, false, fmt.Errorf("read template %s/%s: %w", name, language, err)
	}
	return tpl, true, nil
}

// Status reads the status of template id in tx (nil: on the database),
// taking a share lock on its row in a transaction, so it cannot change
// before tx ends; found is false when the organization has no template
// id. tx is a pgx transaction of a package not on bun yet (campaigns):
// the statement is bun's, run there by DB.QueryPgx.
func (s *Service) Status(ctx context.Context, tx pgx.Tx, t db.Tenant, id int64) (st Status, found bool, err error) {
	sel := s.db.Bun.NewSelect().Model((*Template)(nil)).ModelTableExpr(table(t)).Column("t.status").Where("t.id = ?", id)
	if tx == nil {
		err = sel.Scan(ctx, &st)
	} else {
		err = s.db.QueryPgx(ctx, tx, sel.For("SHARE")).Scan(&st)
	}
	switch {
	case errors.Is(err, sql.ErrNoRows) || errors.Is(err, pgx.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("read status of template %d: %w", id, err)
	}
	return st, true, nil
}

// Existing returns the organization's template of name and language,
// whatever its status, or 422 template_not_found: what a scheduled send
// checks when it is scheduled; its approval is checked at its release
// (docs/api.md, §Scheduled sends).
func (s *Service) Existing(ctx context.Context, t db.Tenant, name, language string) (Template, error) {
	tpl, found, err := s.Find(ctx, t, name, language)
	switch {
	case err != nil:
		return Template{}, err
	case !found:
		return Template{}, ErrNotFoundForSend(name, language)
	}
	return tpl, nil
}
