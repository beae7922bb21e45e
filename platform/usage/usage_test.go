package usage

import (
	"slices"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/apperr"
)

func TestQueryParse(t *testing.T) {
	t.Parallel()
	today := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		q        Query
		from, to string
		fields   []string
	}{
		{"default: the last 30 days", Query{}, "2026-10-24", "2026-11-22", nil},
		{"from alone runs to today", Query{From: "2026-11-01"}, "2026-11-01", "2026-11-22", nil},
		{"to alone covers 30 days ending then", Query{To: "2026-10-31"}, "2026-10-02", "2026-10-31", nil},
		{"one day", Query{From: "2026-11-22", To: "2026-11-22"}, "2026-11-22", "2026-11-22", nil},
		{"a year", Query{From: "2025-11-22", To: "2026-11-22"}, "2025-11-22", "2026-11-22", nil},
		{"over 366 days", Query{From: "2025-11-20", To: "2026-11-22"}, "", "", []string{"from"}},
		{"reversed", Query{From: "2026-11-22", To: "2026-11-21"}, "", "", []string{"from"}},
		{"malformed both", Query{From: "11/01/2026", To: "today"}, "", "", []string{"from", "to"}},
		{"date-time is not a date", Query{From: "2026-11-01T00:00:00Z"}, "", "", []string{"from"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			from, to, err := tt.q.parse(today)
			if tt.fields != nil {
				e, ok := apperr.As(err)
				if !ok || e.Code != "validation_failed" {
					t.Fatalf("error %v, want validation_failed", err)
				}
				var got []string
				for k := range e.Fields {
					got = append(got, k)
				}
				slices.Sort(got)
				if !slices.Equal(got, tt.fields) {
					t.Fatalf("fields %v, want %v", got, tt.fields)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f, g := from.Format(time.DateOnly), to.Format(time.DateOnly); f != tt.from || g != tt.to {
				t.Fatalf("period %s..%s, want %s..%s", f, g, tt.from, tt.to)
			}
		})
	}
}
