package page

import (
	"strconv"
	"testing"

	"github.com/bizmsg/platform/platform/fuzzcheck"
)

// FuzzParse: any limit and cursor a client sends is a page or a 422 naming
// the bad parameter (a control character included); an accepted cursor
// names a row id, and every cursor the lists hand out reads back as the
// row it ended at.
func FuzzParse(f *testing.F) {
	for _, seed := range []struct{ limit, cursor string }{
		{"", ""}, {"25", ""}, {"1", encodeCursor(1)}, {"100", encodeCursor(9_223_372_036_854_775_807)},
		{"0", ""}, {"101", ""}, {"-1", ""}, {"+5", ""}, {"1e2", ""}, {"2\x00", ""},
		{"", "nope"}, {"", "aWQ6MA"}, {"", "aWQ6LTE"}, {"", "aWQ6\x00"}, {"", "=="},
	} {
		f.Add(seed.limit, seed.cursor)
	}
	f.Fuzz(func(t *testing.T, limit, cursor string) {
		q, err := Parse(limit, cursor)
		if err != nil {
			fields := fuzzcheck.Refusal(t, err, "limit", "cursor")
			if fields == nil {
				t.Fatalf("Parse(%q, %q): a 400, want a 422", limit, cursor)
			}
			return
		}
		if q.Limit < 1 || q.Limit > MaxLimit {
			t.Fatalf("Parse(%q, %q) accepted limit %d", limit, cursor, q.Limit)
		}
		if limit == "" && q.Limit != DefaultLimit {
			t.Fatalf("default limit %d", q.Limit)
		}
		if fuzzcheck.Control(limit) || fuzzcheck.Control(cursor) {
			t.Fatalf("Parse(%q, %q) accepted a control character", limit, cursor)
		}
		switch {
		case cursor == "" && q.After != 0:
			t.Fatalf("no cursor but After %d", q.After)
		case cursor != "" && q.After <= 0:
			t.Fatalf("cursor %q accepted as After %d", cursor, q.After)
		}
		if q.After > 0 {
			// The cursor the list would hand out for that row reads back.
			back, err := Parse(strconv.Itoa(q.Limit), encodeCursor(q.After))
			if err != nil || back.After != q.After {
				t.Fatalf("cursor of row %d reads back as %+v, %v", q.After, back, err)
			}
		}
	})
}
