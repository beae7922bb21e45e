package httpx_test

import (
	"strconv"
	"testing"

	"github.com/bizmsg/platform/platform/fuzzcheck"
	"github.com/bizmsg/platform/platform/httpx"
)

// FuzzParseID: a path id is accepted exactly when it is a positive integer
// in plain decimal digits that fits an int64, and it is that integer
// written back; every other spelling (sign, space, leading zero, another
// script's digits, a control character) is no id.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"1", "42", "9223372036854775807", "9223372036854775808", "0", "011", "+11", "-1", " 11",
		"11 ", "1e3", "0x1f", "١٢", "1\x00", "\n7", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := httpx.ParseID(s)
		if ok != fuzzcheck.PlainID(s) {
			t.Fatalf("ParseID(%q) = %d, %v; plain id: %v", s, id, ok, fuzzcheck.PlainID(s))
		}
		if ok && (id <= 0 || strconv.FormatInt(id, 10) != s) {
			t.Fatalf("ParseID(%q) = %d", s, id)
		}
		if !ok && id != 0 {
			t.Fatalf("ParseID(%q) refused but returned %d", s, id)
		}
	})
}
