// Package phone validates phone numbers and normalizes them to E.164, the one
// form phones are stored, compared and sent in.
//
// Parsing and validation use github.com/nyaruka/phonenumbers, a port of
// Google's libphonenumber. Only international input is accepted: the number
// must start with '+' and its country code, since an API request carries no
// reliable region to interpret a national number in.
package phone

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"

	"github.com/bizmsg/platform/platform/apperr"
)

// maxInputLength bounds the input, in characters, before any parsing. The
// longest E.164 number has 15 digits; this leaves room for separators.
const maxInputLength = 64

// ErrInvalid is wrapped by every error Normalize returns. Its message is written
// to be shown as-is as a 422 field error; the errors Normalize returns have the
// same message and carry the precise reason for logs through errors.Unwrap.
var ErrInvalid = errors.New("must be a valid phone number in international format, e.g. +14155552671")

// invalidError is a Normalize failure: its message is ErrInvalid's, and it
// unwraps to ErrInvalid and to the reason.
type invalidError struct {
	reason error
}

// Error returns the 422 message, the same for every failure.
func (e *invalidError) Error() string { return ErrInvalid.Error() }

// Unwrap exposes ErrInvalid and the reason to errors.Is and errors.As.
func (e *invalidError) Unwrap() []error { return []error{ErrInvalid, e.reason} }

// invalid returns an error wrapping ErrInvalid with a reason.
func invalid(format string, args ...any) error {
	return &invalidError{reason: fmt.Errorf(format, args...)}
}

// Required reads a request's required phone field: it records in v under
// field that raw is missing ("is required") or not a valid number
// (ErrInvalid's message), and returns raw in E.164 ("" with a problem).
func Required(v *apperr.Validation, field, raw string) string {
	if strings.TrimSpace(raw) == "" {
		v.Add(field, "is required")
		return ""
	}
	e164, err := Normalize(raw)
	if err != nil {
		v.Add(field, err.Error())
		return ""
	}
	return e164
}

// Normalize validates s and returns it in E.164 ("+14155552671").
//
// Leading and trailing white space is trimmed. The number must then start with
// '+', and may use spaces, '-', '.', '/' and parentheses as separators
// ("+1 (415) 555-2671"). Digits may be in any script (Arabic-Indic digits are
// common input). Letters, extensions, '*', '#' and pause characters are
// refused, as is any number libphonenumber does not consider valid for its
// country. Every error wraps ErrInvalid.
func Normalize(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", invalid("empty")
	}
	if known.has(s) {
		return s, nil
	}
	if utf8.RuneCountInString(s) > maxInputLength {
		return "", invalid("longer than %d characters", maxInputLength)
	}
	if s[0] != '+' {
		return "", invalid("missing leading +")
	}
	for i, r := range s[1:] {
		if !unicode.IsDigit(r) && !isSeparator(r) {
			return "", invalid("character %q at position %d is not a digit or separator", r, i+1)
		}
	}
	n, err := phonenumbers.Parse(s, "")
	if err != nil {
		return "", &invalidError{reason: fmt.Errorf("parsing: %w", err)}
	}
	if !phonenumbers.IsValidNumber(n) {
		return "", invalid("not a valid number for its country code")
	}
	e164 := phonenumbers.Format(n, phonenumbers.E164)
	known.add(e164)
	return e164, nil
}

// known remembers E.164 numbers Normalize has found valid, so that a number
// met again (a send normalizes its recipient at the API, again in the
// network lookup and again at delivery) is answered without
// libphonenumber's parse and regular expressions, which were a fifth of the
// send handler's CPU (docs/design.md, §Phone numbers parsed once).
// Normalize is a pure function of its input and the metadata compiled into
// the binary, so an entry can never be wrong: this is a memo, not state. It
// holds at most knownMax numbers and starts again empty when full.
var known = &memo{max: knownMax, set: make(map[string]struct{})}

const knownMax = 1 << 16

// memo is a bounded set of strings, safe for concurrent use.
type memo struct {
	max int

	mu  sync.RWMutex
	set map[string]struct{}
}

func (m *memo) has(s string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.set[s]
	return ok
}

func (m *memo) add(s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.set) >= m.max {
		m.set = make(map[string]struct{}, m.max)
	}
	m.set[s] = struct{}{}
}

// isSeparator reports whether r may appear between the digits of a number.
func isSeparator(r rune) bool {
	switch r {
	case ' ', '\u00a0', '-', '.', '/', '(', ')':
		return true
	default:
		return false
	}
}

// FromQuery undoes what form encoding does to an unencoded leading '+' in
// a URL query parameter: it arrives as a space. A value that starts with a
// space followed by a digit gets its '+' back ("+14155550200" sent as
// ?phone=+14155550200 reads " 14155550200"); any other value is returned
// as it is, for Normalize to judge.
func FromQuery(s string) string {
	if len(s) > 1 && s[0] == ' ' && s[1] >= '0' && s[1] <= '9' {
		return "+" + s[1:]
	}
	return s
}
