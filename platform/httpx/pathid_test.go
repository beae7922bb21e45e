package httpx

import "testing"

func TestParseID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1", 1, true},
		{"11", 11, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"9223372036854775808", 0, false},
		{"+11", 0, false},
		{"-1", 0, false},
		{"0", 0, false},
		{"011", 0, false},
		{" 11", 0, false},
		{"11 ", 0, false},
		{"1e3", 0, false},
		{"0x1f", 0, false},
		{"١١", 0, false},
		{"", 0, false},
		{"abc", 0, false},
	} {
		got, ok := ParseID(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseID(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
