package templates

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
)

// Find returns the organization's template named name in language, in
// any status, and whether there is one: for a campaign, which names its
// template at creation and needs it approved only when it starts.
func (s *Service) Find(ctx context.Context, t db.Tenant, name, language string) (Template, bool, error) {
	var tpl Template
	found, err := s.sql.QueryFirst(ctx, nil, sqlFor(t, `SELECT `+columns+` FROM {templates} t
		WHERE t.name = $1 AND t.language = $2`), []any{name, language}, func(r db.Rows) error { return scan(r, &tpl) })
	if err != nil {
		return Template{}, false, fmt.Errorf("read template %s/%s: %w", name, language, err)
	}
	return tpl, found, nil
}

// Status reads the status of template id in tx (nil: on the pool), taking
// a share lock on its row in a transaction, so it cannot change before tx
// ends; found is false when the organization has no template id.
func (s *Service) Status(ctx context.Context, tx pgx.Tx, t db.Tenant, id int64) (st Status, found bool, err error) {
	q := `SELECT t.status FROM {templates} t WHERE t.id = $1`
	if tx != nil {
		q += ` FOR SHARE`
	}
	found, err = s.sql.QueryFirst(ctx, tx, sqlFor(t, q), []any{id}, func(r db.Rows) error {
		var raw string
		err := r.Scan(&raw)
		st = Status(raw)
		return err
	})
	if err != nil {
		return "", false, fmt.Errorf("read status of template %d: %w", id, err)
	}
	return st, found, nil
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
