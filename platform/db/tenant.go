package db

import (
	"database/sql"
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

// ParseReference splits ref, a reference the platform gave a network for
// a tenant's row, written "<schema><sep><id>", into the organization id its
// schema names, the schema and the row's id. ok is false when ref is not
// of that form (a reference that is not ours).
func ParseReference(ref, sep string) (orgID int64, schema string, id int64, ok bool) {
	schema, rawID, found := strings.Cut(ref, sep)
	rawOrg, isTenant := strings.CutPrefix(schema, TenantPrefix)
	if !found || !isTenant {
		return 0, "", 0, false
	}
	orgID, err1 := strconv.ParseInt(rawOrg, 10, 64)
	id, err2 := strconv.ParseInt(rawID, 10, 64)
	if err1 != nil || err2 != nil || orgID <= 0 || id <= 0 {
		return 0, "", 0, false
	}
	return orgID, schema, id, true
}

// ReferenceTenant is the tenant of a reference ParseReference split into
// orgID and schema, given the organization's stored schema_name (invalid:
// no such organization, or not provisioned). ok is false when the stored
// schema is not the reference's (a stale or foreign reference).
func ReferenceTenant(orgID int64, schema string, stored sql.NullString) (Tenant, bool) {
	if !stored.Valid {
		return Tenant{}, false
	}
	t, err := NewTenant(orgID, stored.String)
	if err != nil || t.Schema != schema {
		return Tenant{}, false
	}
	return t, true
}
