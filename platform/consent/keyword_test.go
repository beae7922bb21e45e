package consent_test

import (
	"testing"

	"github.com/bizmsg/platform/platform/consent"
)

// The keywords of docs/api.md §Opt-outs, trimmed and in any case; nothing
// else is one.
func TestKeyword(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text, word string
		out, ok    bool
	}{
		{"STOP", "STOP", true, true},
		{" stop\n", "STOP", true, true},
		{"StopAll", "STOPALL", true, true},
		{"unsubscribe", "UNSUBSCRIBE", true, true},
		{"Cancel", "CANCEL", true, true},
		{"end", "END", true, true},
		{"QUIT", "QUIT", true, true},
		{"optout", "OPTOUT", true, true},
		{"\trevoke ", "REVOKE", true, true},
		{"start", "START", false, true},
		{"UNSTOP", "UNSTOP", false, true},
		{" Yes ", "YES", false, true},
		{"HELP", "", false, false},
		{"please stop", "", false, false},
		{"STOP!", "", false, false},
		{"S TOP", "", false, false},
		{"opt out", "", false, false},
		{"", "", false, false},
		{"ＳＴＯＰ", "", false, false},
	}
	for _, tt := range tests {
		word, out, ok := consent.Keyword(tt.text)
		if word != tt.word || out != tt.out || ok != tt.ok {
			t.Errorf("Keyword(%q) = %q %v %v, want %q %v %v", tt.text, word, out, ok, tt.word, tt.out, tt.ok)
		}
	}
}
