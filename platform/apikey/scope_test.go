package apikey

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestValidScope(t *testing.T) {
	t.Parallel()

	tests := []struct {
		scope string
		want  bool
	}{
		{ScopeMessagesSend, true},
		{ScopeMessagesRead, true},
		{ScopeContactsLookup, true},
		{ScopeUsageRead, true},
		{ScopeWebhooksManage, true},
		{ScopeAll, true},
		{"", false},
		{"messages", false},
		{"messages.*", false},
		{"Messages.Send", false},
		{" messages.send", false},
		{"admin", false},
	}
	for _, tt := range tests {
		t.Run(tt.scope, func(t *testing.T) {
			t.Parallel()
			if got := ValidScope(tt.scope); got != tt.want {
				t.Fatalf("ValidScope(%q) = %v, want %v", tt.scope, got, tt.want)
			}
		})
	}
}

func TestCovers(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		have []string
		need string
		want bool
	}{
		{"exact", []string{ScopeMessagesSend}, ScopeMessagesSend, true},
		{"among others", []string{ScopeUsageRead, ScopeMessagesRead}, ScopeMessagesRead, true},
		{"star covers send", []string{ScopeAll}, ScopeMessagesSend, true},
		{"star covers star", []string{ScopeAll}, ScopeAll, true},
		{"star covers lookup", []string{ScopeMessagesRead, ScopeAll}, ScopeContactsLookup, true},
		{"send does not cover read", []string{ScopeMessagesSend}, ScopeMessagesRead, false},
		{"all named scopes do not cover star", []string{ScopeMessagesSend, ScopeMessagesRead, ScopeContactsLookup, ScopeUsageRead}, ScopeAll, false},
		{"nothing covers nothing", nil, ScopeMessagesSend, false},
		{"empty have", []string{}, ScopeUsageRead, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Covers(tt.have, tt.need); got != tt.want {
				t.Fatalf("Covers(%v, %q) = %v, want %v", tt.have, tt.need, got, tt.want)
			}
		})
	}
}

func TestSubset(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		requested []string
		have      []string
		want      bool
	}{
		{"equal", []string{ScopeMessagesSend}, []string{ScopeMessagesSend}, true},
		{"smaller", []string{ScopeMessagesSend}, []string{ScopeMessagesSend, ScopeMessagesRead}, true},
		{"anything under star", []string{ScopeMessagesSend, ScopeUsageRead}, []string{ScopeAll}, true},
		{"star under star", []string{ScopeAll}, []string{ScopeAll}, true},
		{"star not under named scopes", []string{ScopeAll}, []string{ScopeMessagesSend, ScopeMessagesRead, ScopeContactsLookup, ScopeUsageRead}, false},
		{"one missing", []string{ScopeMessagesSend, ScopeContactsLookup}, []string{ScopeMessagesSend}, false},
		{"larger", []string{ScopeMessagesSend, ScopeMessagesRead}, []string{ScopeMessagesRead}, false},
		{"empty requested", nil, []string{ScopeMessagesRead}, true},
		{"nothing held", []string{ScopeUsageRead}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Subset(tt.requested, tt.have); got != tt.want {
				t.Fatalf("Subset(%v, %v) = %v, want %v", tt.requested, tt.have, got, tt.want)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		in      []string
		want    []string
		wantErr error
		errHas  string
	}{
		{"single", []string{ScopeUsageRead}, []string{ScopeUsageRead}, nil, ""},
		{"sorted", []string{ScopeUsageRead, ScopeMessagesSend, ScopeContactsLookup}, []string{ScopeContactsLookup, ScopeMessagesSend, ScopeUsageRead}, nil, ""},
		{"deduplicated", []string{ScopeMessagesRead, ScopeMessagesSend, ScopeMessagesRead}, []string{ScopeMessagesRead, ScopeMessagesSend}, nil, ""},
		{"star alone", []string{ScopeAll}, []string{ScopeAll}, nil, ""},
		{"star absorbs the rest", []string{ScopeMessagesSend, ScopeAll, ScopeUsageRead}, []string{ScopeAll}, nil, ""},
		{"nil", nil, nil, ErrNoScopes, ""},
		{"empty", []string{}, nil, ErrNoScopes, ""},
		{"unknown named", []string{ScopeMessagesSend, "messages.delete"}, nil, ErrUnknownScope, `"messages.delete"`},
		{"empty string", []string{""}, nil, ErrUnknownScope, `""`},
		{"unknown next to star", []string{ScopeAll, "root"}, nil, ErrUnknownScope, `"root"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := slices.Clone(tt.in)
			got, err := Normalize(tt.in)
			if !slices.Equal(tt.in, in) {
				t.Fatalf("Normalize modified its input: %v", tt.in)
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Normalize(%v) error = %v, want %v", tt.in, err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("error %q does not name %s", err, tt.errHas)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("Normalize(%v) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}
