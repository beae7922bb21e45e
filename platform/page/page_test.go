package page

import (
	"testing"

	"github.com/bizmsg/platform/platform/apperr"
)

func TestParsePage(t *testing.T) {
	t.Parallel()
	// A cursor as the list hands it out, taken from a real two-row page.
	_, cursor := Cut(Query{Limit: 1}, []int64{9, 8}, func(id int64) int64 { return id })
	tests := []struct {
		limit, cursor string
		want          Query
		wantErr       string
	}{
		{"", "", Query{Limit: 25}, ""},
		{"1", "", Query{Limit: 1}, ""},
		{"100", cursor, Query{Limit: 100, After: 9}, ""},
		{"0", "", Query{}, "limit"},
		{"101", "", Query{}, "limit"},
		{"ten", "", Query{}, "limit"},
		{"", "garbage!", Query{}, "cursor"},
		{"", "aWQ6LTE", Query{}, "cursor"}, // "id:-1"
	}
	for _, tt := range tests {
		got, err := Parse(tt.limit, tt.cursor)
		if tt.wantErr == "" {
			if err != nil || got != tt.want {
				t.Errorf("Parse(%q, %q) = %+v, %v; want %+v", tt.limit, tt.cursor, got, err, tt.want)
			}
			continue
		}
		if e, ok := apperr.As(err); !ok || len(e.Fields[tt.wantErr]) == 0 {
			t.Errorf("Parse(%q, %q) error = %v; want a %s field error", tt.limit, tt.cursor, err, tt.wantErr)
		}
	}
}
