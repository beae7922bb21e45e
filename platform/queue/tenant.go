package queue

import "github.com/bizmsg/platform/platform/db"

// TenantRef names the tenant a job works in. Every job of a tenant embeds
// it, so its fields stand at the top of the job's JSON arguments
// (org_id, schema), where operators and DeliveryJobOf read them.
type TenantRef struct {
	OrgID  int64  `json:"org_id"`
	Schema string `json:"schema"`
}

// RefOf names tenant t.
func RefOf(t db.Tenant) TenantRef { return TenantRef{OrgID: t.OrgID, Schema: t.Schema} }

// Tenant checks the reference (a job's arguments come from the database,
// where an operator may have written them) and returns its tenant.
func (r TenantRef) Tenant() (db.Tenant, error) { return db.NewTenant(r.OrgID, r.Schema) }
