package keys_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/fuzzcheck"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/keys"
)

// FuzzCreateRequest: any body of POST /api-keys (both APIs) is decoded
// (httpx.BindJSON) and read (CreateRequest.Spec) into a key spec, or refused
// as the client's fault naming its fields; a control character in the name
// is refused naming it; an accepted spec has a clean name, known scopes
// stored sorted and deduplicated, and 1..365 days.
func FuzzCreateRequest(f *testing.F) {
	for _, s := range []string{
		`{"name":"k","scopes":["usage.read"]}`, `{"name":"  k ","scopes":["messages.send","*"],"expires_in_days":365}`,
		`{"name":"a\u0000b","scopes":["*"]}`, `{"name":"a\u0085b","scopes":["*"]}`, `{"name":"\t","scopes":[]}`,
		`{"name":"k","scopes":["usage.read\u0000"],"expires_in_days":30.0}`, `{"name":"k","scopes":"*","expires_in_days":"30"}`,
		`{"name":null,"scopes":null,"expires_in_days":null}`, `{}`, `[]`, `{"name":"k"} x`,
	} {
		f.Add([]byte(s))
	}
	fields := []string{"name", "scopes", "expires_in_days"}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req keys.CreateRequest
		if err := httpx.BindJSON(fuzzcheck.JSONContext(body), &req); err != nil {
			fuzzcheck.Refusal(t, err, fields...)
			return
		}
		spec, err := req.Spec()
		var raw struct {
			Name *string `json:"name"`
		}
		if json.Unmarshal(body, &raw) == nil && raw.Name != nil && fuzzcheck.InnerControl(*raw.Name) {
			if err == nil {
				t.Fatalf("name %q accepted", *raw.Name)
			}
			fuzzcheck.Names(t, err, "name")
		}
		if err != nil {
			fuzzcheck.Refusal(t, err, fields...)
			return
		}
		if spec.Name == "" || spec.Name != strings.TrimSpace(spec.Name) || utf8.RuneCountInString(spec.Name) > keys.MaxNameLength || fuzzcheck.Control(spec.Name) {
			t.Fatalf("name %q accepted", spec.Name)
		}
		if len(spec.Scopes) == 0 || !slices.IsSorted(spec.Scopes) || len(slices.Compact(slices.Clone(spec.Scopes))) != len(spec.Scopes) {
			t.Fatalf("scopes %v", spec.Scopes)
		}
		for _, s := range spec.Scopes {
			if !apikey.ValidScope(s) || (s == apikey.ScopeAll && len(spec.Scopes) != 1) {
				t.Fatalf("scopes %v", spec.Scopes)
			}
		}
		if spec.ExpiresInDays < keys.MinExpiresInDays || spec.ExpiresInDays > keys.MaxExpiresInDays {
			t.Fatalf("expires_in_days %d", spec.ExpiresInDays)
		}
	})
}
