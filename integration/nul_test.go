package integration

import (
	"net/http"
	"strings"
	"testing"
)

// A NUL character (U+0000), which no text column can store, is a 422
// naming the field in every body and filter that used to reach the
// database with it (a 500), and nothing is created.
func TestNULCharacterIs422(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	org := e.Register(t)
	nul := "a\u0000b"
	for _, tc := range []struct {
		name  string
		req   Request
		field string
	}{
		{"login email", Request{Method: http.MethodPost, Path: centralPath + "/login",
			Body: map[string]any{"email": nul + "@example.com", "password": "whatever it is"}}, "email"},
		{"register organization_name", Request{Method: http.MethodPost, Path: centralPath + "/register",
			Body: map[string]any{"organization_name": nul, "name": "Owner", "email": uniqueEmail("nul"), "password": "correct horse battery staple"}}, "organization_name"},
		{"register name", Request{Method: http.MethodPost, Path: centralPath + "/register",
			Body: map[string]any{"organization_name": "Org", "name": nul, "email": uniqueEmail("nul"), "password": "correct horse battery staple"}}, "name"},
		{"member name", Request{Method: http.MethodPost, Path: centralPath + "/users", Header: org.Bearer(),
			Body: map[string]any{"name": nul, "email": uniqueEmail("member"), "role": "member", "password": "initial password"}}, "name"},
		{"tenant client_reference filter", Request{Method: http.MethodGet, Path: messagesPath + "?client_reference=%00", Header: org.Key()}, "client_reference"},
		{"central client_reference filter", Request{Method: http.MethodGet, Path: centralPath + "/messages?client_reference=x%00", Header: org.Bearer()}, "client_reference"},
	} {
		r := e.Do(tc.req)
		m := wantError(t, r, http.StatusUnprocessableEntity, "validation_failed")
		errs, _ := m["errors"].(map[string]any)
		if _, ok := errs[tc.field]; !ok {
			t.Fatalf("%s: errors %v, want one for %s", tc.name, m["errors"], tc.field)
		}
	}
	// Nothing was created: the organization still has its owner alone.
	r := e.Do(Request{Method: http.MethodGet, Path: centralPath + "/users", Header: org.Bearer()})
	if r.Status != http.StatusOK || strings.Contains(string(r.Body), "member") {
		t.Fatalf("members after the refusals: %d %s", r.Status, r.Body)
	}
}
