package db

import (
	"fmt"
	"strconv"
	"strings"
)

// Tenant is an organization's identity as the data layer sees it: its id and the
// Postgres schema that holds its tables. It is the one place that maps a tenant
// to its schema; every tenant query names its tables through it.
type Tenant struct {
	OrgID  int64
	Schema string
}

// TenantPrefix is the prefix of every tenant schema name.
const TenantPrefix = "tenant_"

// SchemaFor returns the schema name of organization orgID. Schema names come
// only from here (stored on the organization row at creation), never from user
// input.
func SchemaFor(orgID int64) string { return TenantPrefix + strconv.FormatInt(orgID, 10) }

// NewTenant returns the tenant of organization orgID whose stored schema name is
// schema. It refuses a schema name that is not the one SchemaFor gives, so a
// corrupted row can never route queries to another schema.
func NewTenant(orgID int64, schema string) (Tenant, error) {
	if orgID <= 0 || schema != SchemaFor(orgID) {
		return Tenant{}, fmt.Errorf("tenant %d: unexpected schema %q", orgID, schema)
	}
	return Tenant{OrgID: orgID, Schema: schema}, nil
}

// StoredTenant is NewTenant for an organization row's schema_name, which
// is NULL until the organization's schema is provisioned: then the
// organization has no tenant, an error.
func StoredTenant(orgID int64, schema *string) (Tenant, error) {
	if schema == nil {
		return Tenant{}, fmt.Errorf("organization %d has no tenant schema", orgID)
	}
	return NewTenant(orgID, *schema)
}

// Null is v as a statement argument: nil (SQL NULL) when v is its type's
// zero value ("", 0), for optional columns the caller holds as plain
// values.
func Null[T comparable](v T) any {
	var zero T
	if v == zero {
		return nil
	}
	return v
}

// Table returns the quoted, schema-qualified name of one of the tenant's tables,
// e.g. `"tenant_42"."messages"`, for hand-written SQL on the hot paths.
func (t Tenant) Table(name string) string {
	return quoteIdent(t.Schema) + "." + quoteIdent(name)
}

// Quoted returns the schema's quoted name, e.g. `"tenant_42"`, for
// statements that name the schema apart from a table.
func (t Tenant) Quoted() string { return quoteIdent(t.Schema) }

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
