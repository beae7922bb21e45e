package jsonenc_test

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/jsonenc"
)

// strs are strings that take every path of String: plain ASCII, HTML
// characters, quotes and backslashes, control characters, multi-byte and
// invalid UTF-8, the line and paragraph separators.
var strs = []string{"", "+14155550100", "message.sent", "<a href='x'>&amp;</a>", `"q" \ /`,
	"\x00\x01\b\f\n\r\t\x1f\x7f", "é ü 中文 😀", "\xff\xfe\xc3", "\u2028\u2029", "tail\\"}

func TestString(t *testing.T) {
	t.Parallel()
	for _, s := range strs {
		want, _ := json.Marshal(s)
		if got := jsonenc.String([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("String(%q) = %s, want %s", s, got[1:], want)
		}
		if got := jsonenc.NullString(nil, &s); string(got) != string(want) {
			t.Errorf("NullString(&%q) = %s, want %s", s, got, want)
		}
	}
	if got := jsonenc.NullString(nil, nil); string(got) != "null" {
		t.Errorf("NullString(nil) = %s", got)
	}
}

func TestInt(t *testing.T) {
	t.Parallel()
	for _, n := range []int64{0, 1, -1, 9007199254740993, math.MaxInt64, math.MinInt64} {
		want, _ := json.Marshal(n)
		if got := jsonenc.Int(nil, n); string(got) != string(want) {
			t.Errorf("Int(%d) = %s, want %s", n, got, want)
		}
		if got := jsonenc.NullInt(nil, &n); string(got) != string(want) {
			t.Errorf("NullInt(&%d) = %s, want %s", n, got, want)
		}
	}
	if got := jsonenc.NullInt(nil, nil); string(got) != "null" {
		t.Errorf("NullInt(nil) = %s", got)
	}
}

func TestTime(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 26, 16, 4, 5, 987654000, time.FixedZone("CET", 3600))
	for _, layout := range []string{time.RFC3339, time.RFC3339Nano} {
		want, _ := json.Marshal(at.Format(layout))
		if got := jsonenc.Time(nil, at, layout); string(got) != string(want) {
			t.Errorf("Time(%s) = %s, want %s", layout, got, want)
		}
	}
}

// FuzzString: any string is escaped as encoding/json escapes it.
func FuzzString(f *testing.F) {
	for _, s := range strs {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := jsonenc.String(nil, s); string(got) != string(want) {
			t.Fatalf("String(%q) = %s, want %s", s, got, want)
		}
	})
}
