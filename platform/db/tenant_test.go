package db

import (
	"database/sql"
	"testing"
)

func TestParseReference(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ref, sep string
		org, id  int64
		ok       bool
	}{
		{"tenant_7:42", ":", 7, 42, true},
		{"tenant_7:template:42", ":template:", 7, 42, true},
		{"tenant_7:template:42", ":", 0, 0, false}, // "template:42" is no id
		{"public:42", ":", 0, 0, false},
		{"tenant_x:42", ":", 0, 0, false},
		{"tenant_7:0", ":", 0, 0, false},
		{"tenant_7", ":", 0, 0, false},
		{"consent:tenant_7:abc", ":", 0, 0, false},
	}
	for _, tt := range tests {
		org, schema, id, ok := ParseReference(tt.ref, tt.sep)
		if org != tt.org || id != tt.id || ok != tt.ok || (ok && schema != SchemaFor(org)) {
			t.Errorf("ParseReference(%q, %q) = %d, %q, %d, %v; want %d, %d, %v", tt.ref, tt.sep, org, schema, id, ok, tt.org, tt.id, tt.ok)
		}
	}
}

func TestReferenceTenant(t *testing.T) {
	t.Parallel()
	if got, ok := ReferenceTenant(7, "tenant_7", sql.NullString{String: "tenant_7", Valid: true}); !ok || got != (Tenant{OrgID: 7, Schema: "tenant_7"}) {
		t.Fatalf("stored schema: %+v, %v", got, ok)
	}
	if _, ok := ReferenceTenant(7, "tenant_7", sql.NullString{}); ok {
		t.Fatal("an organization without a schema has no tenant")
	}
	if _, ok := ReferenceTenant(7, "tenant_7", sql.NullString{String: "tenant_8", Valid: true}); ok {
		t.Fatal("a foreign stored schema matched")
	}
}
