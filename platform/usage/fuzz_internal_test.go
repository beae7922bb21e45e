package usage

import (
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/fuzzcheck"
)

// FuzzQuery: any from and to of GET /usage is a period of 1..366 UTC days
// (from not after to) or a 422 naming the bad parameter; a control
// character in one is refused naming it.
func FuzzQuery(f *testing.F) {
	for _, s := range [][2]string{
		{"", ""}, {"2026-11-01", "2026-11-22"}, {"2026-11-01", ""}, {"", "2026-11-22"}, {"2026-11-23", "2026-11-22"},
		{"2025-01-01", "2026-11-22"}, {"2026-11-1", "22.11.2026"}, {"2026-11-01\x00", "\n2026-11-22"}, {"2026-02-30", ""},
	} {
		f.Add(s[0], s[1])
	}
	today := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, from, to string) {
		gotFrom, gotTo, err := Query{From: from, To: to}.parse(today)
		for _, c := range [][2]string{{"from", from}, {"to", to}} {
			if fuzzcheck.Control(c[1]) {
				if err == nil {
					t.Fatalf("%s %q accepted", c[0], c[1])
				}
				fuzzcheck.Names(t, err, c[0])
			}
		}
		if err != nil {
			if fuzzcheck.Refusal(t, err, "from", "to") == nil {
				t.Fatal("a usage query refused with a 400, want a 422")
			}
			return
		}
		days := int(gotTo.Sub(gotFrom).Hours()/24) + 1
		if gotFrom.After(gotTo) || days < 1 || days > MaxPeriodDays || gotFrom.Location() != time.UTC ||
			!gotFrom.Equal(gotFrom.Truncate(24*time.Hour)) || !gotTo.Equal(gotTo.Truncate(24*time.Hour)) {
			t.Fatalf("period %v..%v from %q..%q", gotFrom, gotTo, from, to)
		}
		if from != "" && gotFrom.Format(time.DateOnly) != from || to != "" && gotTo.Format(time.DateOnly) != to {
			t.Fatalf("period %v..%v is not what %q..%q said", gotFrom, gotTo, from, to)
		}
	})
}
