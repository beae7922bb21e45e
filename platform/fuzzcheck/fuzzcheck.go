// Package fuzzcheck holds the invariants the fuzz targets of the request
// decoders and query parsers assert (go test -fuzz; README, "Test it"):
//
//   - nothing panics (the fuzz engine reports a panic by itself);
//   - a refusal is the client's: a 422 validation_failed naming at least one
//     field, each one the request has, or a 400 malformed_json; never a 500;
//   - a control character (Unicode Cc: U+0000–U+001F, U+007F–U+009F) in a
//     field is refused naming that field, except white space around a value
//     that the field trims (phones, times, names) and the free text of a
//     text message and a password, which refuse NUL only;
//   - an id is a positive integer in plain decimal digits.
//
// It is a test helper (floor "test" in integration/architecture_test.go):
// only _test files import it.
package fuzzcheck

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apperr"
)

// Refusal checks that err is a refusal of the client's request: a 422
// validation_failed whose field errors are non-empty and all among fields
// (any field when fields is empty), or a 400 malformed_json. It returns the
// named fields (nil for a 400).
func Refusal(t testing.TB, err error, fields ...string) map[string][]string {
	t.Helper()
	e, ok := apperr.As(err)
	if !ok {
		t.Fatalf("refusal %v (%T) is not an *apperr.Error: it would answer 500", err, err)
	}
	switch e.Kind {
	case apperr.KindMalformed:
		if e.Code != "malformed_json" {
			t.Fatalf("400 with code %q, want malformed_json", e.Code)
		}
		return nil
	case apperr.KindInvalid:
	default:
		t.Fatalf("refusal %v is a %s, want a 422 or a 400", err, e.Kind)
	}
	if e.Code != "validation_failed" || len(e.Fields) == 0 {
		t.Fatalf("422 %q names no field: %v", e.Code, err)
	}
	for name, msgs := range e.Fields {
		if len(msgs) == 0 || slices.Contains(msgs, "") {
			t.Fatalf("field %s has an empty message: %v", name, e.Fields)
		}
		if len(fields) > 0 && !slices.Contains(fields, name) {
			t.Fatalf("field error for %q, which is not one of %v: %v", name, fields, e.Fields)
		}
	}
	return e.Fields
}

// Names checks that err is a 422 naming field.
func Names(t testing.TB, err error, field string) {
	t.Helper()
	e, ok := apperr.As(err)
	if !ok || e.Kind != apperr.KindInvalid || len(e.Fields[field]) == 0 {
		t.Fatalf("error %v does not name %q", err, field)
	}
}

// Control reports whether s holds a control character.
func Control(s string) bool { return strings.IndexFunc(s, unicode.IsControl) >= 0 }

// InnerControl reports whether s holds a control character other than
// white space around it (which the trimming fields drop).
func InnerControl(s string) bool { return Control(strings.TrimSpace(s)) }

// NUL reports whether s holds the NUL character.
func NUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }

// PlainID reports whether s is a positive integer in plain decimal digits
// (no sign, space or leading zero) that fits an int64: the one form of an
// id (httpx.ParseID).
func PlainID(s string) bool {
	if s == "" || s[0] == '0' || len(s) > 19 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) < 19 || s <= "9223372036854775807"
}

// JSONContext returns a gin context whose request is a POST of body as
// application/json, for the decoders that read it (httpx.BindJSON).
func JSONContext(body []byte) *gin.Context {
	req := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return &gin.Context{Request: req}
}
