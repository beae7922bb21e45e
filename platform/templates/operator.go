package templates

import (
	"context"
	"fmt"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
)

// Located is a template with its organization, as the network's operator
// sees templates: across organizations.
type Located struct {
	OrgID    int64    `json:"organization_id"`
	Template Template `json:"template"`
}

// ListAll returns the templates of each of tenants with status (any when
// ""), by organization, then oldest first: what the network's operator
// reviews.
func (s *Service) ListAll(ctx context.Context, tenants []db.Tenant, status Status) ([]Located, error) {
	var out []Located
	for _, t := range tenants {
		err := s.sql.Query(ctx, nil, sqlFor(t, `SELECT `+columns+` FROM {templates} t
			WHERE $1::text = '' OR t.status = $1 ORDER BY t.id`), []any{string(status)}, func(r db.Rows) error {
			for r.Next() {
				l := Located{OrgID: t.OrgID}
				if err := scan(r, &l.Template); err != nil {
					return err
				}
				out = append(out, l)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list templates of %s: %w", t.Schema, err)
		}
	}
	return out, nil
}

// Locate returns the tenant among tenants that holds template id (ids are
// per organization): a not_found error when none does, a
// template_ambiguous validation error when several do (the operator names
// the organization then).
func (s *Service) Locate(ctx context.Context, tenants []db.Tenant, id int64) (db.Tenant, error) {
	var found []db.Tenant
	for _, t := range tenants {
		ok, err := s.sql.QueryFirst(ctx, nil, sqlFor(t, `SELECT t.id FROM {templates} t WHERE t.id = $1`), []any{id},
			func(r db.Rows) error { var got int64; return r.Scan(&got) })
		if err != nil {
			return db.Tenant{}, fmt.Errorf("find template %d in %s: %w", id, t.Schema, err)
		}
		if ok {
			found = append(found, t)
		}
	}
	switch len(found) {
	case 0:
		return db.Tenant{}, errNotFound()
	case 1:
		return found[0], nil
	default:
		return db.Tenant{}, apperr.Invalid("template_ambiguous",
			fmt.Sprintf("%d organizations have a template %d: name the organization.", len(found), id))
	}
}
