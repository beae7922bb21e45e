package httpx_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/fuzzcheck"
	"github.com/bizmsg/platform/platform/httpx"
)

// fuzzBody is a body with the shapes handlers decode: strings, numbers,
// nested objects, arrays and a raw field.
type fuzzBody struct {
	Name  string            `json:"name"`
	Count int               `json:"count"`
	Tags  []string          `json:"tags"`
	Meta  map[string]string `json:"meta"`
	Inner struct {
		Label *string `json:"label"`
	} `json:"inner"`
	Raw json.RawMessage `json:"raw"`
}

// FuzzBindJSON: any body is decoded or refused as the client's fault (400
// malformed_json, or 422 naming the field of the wrong type or with a NUL),
// and a decoded value never holds a NUL in a string.
func FuzzBindJSON(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","count":1,"tags":["x"],"meta":{"k":"v"},"inner":{"label":"l"},"raw":{"a":1}}`,
		`{"name":"a\u0000"}`, `{"tags":["ok","b\u0000"]}`, `{"meta":{"k\u0000":"v"}}`, `{"inner":{"label":"\u0000"}}`,
		`{"count":"1"}`, `{"count":1.5}`, `{"name":1}`, `[]`, `null`, `{} {}`, `{`, ``, `"x"`, `{"raw":"\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var dst fuzzBody
		err := httpx.BindJSON(fuzzcheck.JSONContext(body), &dst)
		if err != nil {
			fuzzcheck.Refusal(t, err)
			return
		}
		for _, s := range append([]string{dst.Name}, dst.Tags...) {
			if fuzzcheck.NUL(s) {
				t.Fatalf("decoded %q from %q", s, body)
			}
		}
		for k, v := range dst.Meta {
			if fuzzcheck.NUL(k) || fuzzcheck.NUL(v) {
				t.Fatalf("decoded meta %q: %q", k, v)
			}
		}
		if dst.Inner.Label != nil && strings.IndexByte(*dst.Inner.Label, 0) >= 0 {
			t.Fatalf("decoded label %q", *dst.Inner.Label)
		}
	})
}
