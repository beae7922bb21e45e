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
		var list []Template
		sel := s.db.Bun.NewSelect().Model(&list).ModelTableExpr(table(t)).OrderExpr("t.id")
		if status != "" {
			sel.Where("t.status = ?", status)
		}
		if err := sel.Scan(ctx); err != nil {
			return nil, fmt.Errorf("list templates of %s: %w", t.Schema, err)
		}
		for _, tpl := range list {
			out = append(out, Located{OrgID: t.OrgID, Template: tpl})
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
		ok, err := s.db.Bun.NewSelect().Model((*Template)(nil)).ModelTableExpr(table(t)).Where("t.id = ?", id).Exists(ctx)
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
