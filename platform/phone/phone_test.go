package phone

import (
	"errors"
	"strings"
	"testing"
)

func TestNormalizeAccepts(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		in   string
		want string
	}{
		{"E.164 already", "+14155552671", "+14155552671"},
		{"US with parentheses and dash", "+1 (415) 555-2671", "+14155552671"},
		{"US with dots", "+1.415.555.2671", "+14155552671"},
		{"US with dashes", "+1-415-555-2671", "+14155552671"},
		{"US with slashes", "+1/415/555.2671", "+14155552671"},
		{"space after plus", "+ 1 415 555 2671", "+14155552671"},
		{"surrounding white space", "  \t+14155552671\n ", "+14155552671"},
		{"non-breaking spaces", "+1\u00a0415\u00a0555\u00a02671", "+14155552671"},
		{"UK London", "+44 20 7946 0958", "+442079460958"},
		{"UK with national prefix in parentheses", "+44 (0) 20 7946 0958", "+442079460958"},
		{"UK mobile", "+44 7911 123456", "+447911123456"},
		{"Germany Berlin", "+49 30 901820", "+4930901820"},
		{"France Paris", "+33 1 42 68 53 00", "+33142685300"},
		{"Italy keeps its leading zero", "+39 06 1234 5678", "+390612345678"},
		{"Saudi Arabia mobile", "+966 50 123 4567", "+966501234567"},
		{"Saudi Arabia, Arabic-Indic digits", "+٩٦٦٥٠١٢٣٤٥٦٧", "+966501234567"},
		{"Saudi Arabia, Eastern Arabic-Indic digits", "+۹۶۶۵۰۱۲۳۴۵۶۷", "+966501234567"},
		{"Egypt mobile", "+20 10 1234 5678", "+201012345678"},
		{"UAE mobile", "+971 50 123 4567", "+971501234567"},
		{"Japan Tokyo", "+81 3-1234-5678", "+81312345678"},
		{"Brazil São Paulo mobile", "+55 11 91234-5678", "+5511912345678"},
		{"India mobile", "+91 98765 43210", "+919876543210"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Normalize(tt.in)
			if err != nil || got != tt.want {
				t.Fatalf("Normalize(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
			// Normalizing is idempotent.
			again, err := Normalize(got)
			if err != nil || again != got {
				t.Fatalf("Normalize(%q) = %q, %v; want it unchanged", got, again, err)
			}
		})
	}
}

func TestNormalizeRefuses(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		in     string
		reason string // a substring of the wrapped reason
	}{
		{"empty", "", "empty"},
		{"only spaces", "   ", "empty"},
		{"missing plus", "14155552671", "missing leading +"},
		{"national format", "(415) 555-2671", "missing leading +"},
		{"international call prefix instead of plus", "0044 20 7946 0958", "missing leading +"},
		{"plus not first", "1+4155552671", "missing leading +"},
		{"plus only", "+", "parsing"},
		{"double plus", "++14155552671", "not a digit or separator"},
		{"plus inside", "+1415+5552671", "not a digit or separator"},
		{"letters (vanity number)", "+1 800 FLOWERS", "not a digit or separator"},
		{"letter in the middle", "+1415555267l", "not a digit or separator"},
		{"extension", "+1 415 555 2671 ext 1", "not a digit or separator"},
		{"hash", "+14155552671#", "not a digit or separator"},
		{"star", "*+14155552671", "missing leading +"},
		{"pause character", "+14155552671,1", "not a digit or separator"},
		{"underscore", "+1_415_555_2671", "not a digit or separator"},
		{"too short", "+1 415 555 267", "not a valid number"},
		{"too short to parse", "+1", "parsing"},
		{"too long", "+1 415 555 26711", "not a valid number"},
		{"much too long", "+" + strings.Repeat("1", 70), "longer than"},
		{"unknown country code", "+999 123456", "parsing"},
		{"country code zero", "+0 415 555 2671", "parsing"},
		{"invalid US area code", "+1 200 555 2671", "not a valid number"},
		{"invalid UK number", "+44 20 1234", "not a valid number"},
		{"reserved UK drama range", "+44 7700 900123", "not a valid number"},
		{"invalid Saudi prefix", "+966 10 123 4567", "not a valid number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Normalize(tt.in)
			if !errors.Is(err, ErrInvalid) || got != "" {
				t.Fatalf("Normalize(%q) = %q, %v; want \"\", ErrInvalid", tt.in, got, err)
			}
			if err.Error() != ErrInvalid.Error() {
				t.Fatalf("message %q, want the 422 message %q", err, ErrInvalid)
			}
			var ie *invalidError
			if !errors.As(err, &ie) || !strings.Contains(ie.reason.Error(), tt.reason) {
				t.Fatalf("reason %v, want it to contain %q", ie.reason, tt.reason)
			}
		})
	}
}

func TestErrInvalidMessage(t *testing.T) {
	t.Parallel()

	const want = "must be a valid phone number in international format, e.g. +14155552671"
	if ErrInvalid.Error() != want {
		t.Fatalf("ErrInvalid = %q, want %q", ErrInvalid, want)
	}
}

// A number met again is answered from the memo with the same result; a
// refused one is never remembered; the memo stays within its bound.
func TestNormalizeMemo(t *testing.T) {
	t.Parallel()
	const raw, want = "+1 (415) 555-2672", "+14155552672"
	for range 2 {
		for _, in := range []string{raw, want} {
			if got, err := Normalize(in); err != nil || got != want {
				t.Fatalf("Normalize(%q) = %q, %v", in, got, err)
			}
		}
	}
	if !known.has(want) || known.has(raw) {
		t.Fatalf("memo holds the raw form or lacks the E.164 one")
	}
	if _, err := Normalize("+1415555"); err == nil || known.has("+1415555") {
		t.Fatalf("a refused number was accepted or remembered: %v", err)
	}
	m := &memo{max: 2, set: map[string]struct{}{}}
	for _, s := range []string{"a", "b", "c"} {
		m.add(s)
	}
	if len(m.set) > 2 || !m.has("c") {
		t.Fatalf("memo over its bound or lost the newest entry: %v", m.set)
	}
}

func TestFromQuery(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		" 14155550200":  "+14155550200",
		"+14155550200":  "+14155550200",
		"14155550200":   "14155550200",
		" ":             " ",
		"":              "",
		"  14155550200": "  14155550200",
		" (415) 555":    " (415) 555",
	} {
		if got := FromQuery(in); got != want {
			t.Errorf("FromQuery(%q) = %q, want %q", in, got, want)
		}
	}
}
