// Package apperr is the error type services return. It describes what went
// wrong in domain terms (a Kind, a machine code, a human message, field errors)
// so that services never need to know about HTTP; the transport layer maps a
// Kind to a status code and renders the envelope.
package apperr

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Kind classifies an error. The zero value is Internal, so an Error whose
// Kind was never set is treated as the server's fault, never the client's.
type Kind int

// The kinds of error. The HTTP status each maps to is noted for reference;
// the mapping itself lives in the transport layer.
const (
	// KindInternal is an unexpected failure (500). Its code and message are never
	// shown to clients; a generic message is rendered instead.
	KindInternal Kind = iota
	// KindMalformed means the request could not be parsed (400).
	KindMalformed
	// KindUnauthenticated means credentials are missing, invalid, expired or revoked (401).
	KindUnauthenticated
	// KindForbidden means the caller is known but lacks the scope or role (403).
	KindForbidden
	// KindNotFound means the resource does not exist or belongs to someone else (404).
	KindNotFound
	// KindConflict means the request duplicates an existing resource (409).
	KindConflict
	// KindTooLarge means the request body exceeds the allowed size (413).
	KindTooLarge
	// KindUnsupportedMediaType means the request body is not in an accepted format (415).
	KindUnsupportedMediaType
	// KindInvalid means validation failed or the resource's state forbids the action (422).
	KindInvalid
	// KindRateLimited means a rate or daily limit was hit (429).
	KindRateLimited
	// KindUnavailable means a dependency such as the database is unavailable (503).
	KindUnavailable
)

// kindInfo holds the log name, default machine code and default message of a Kind.
type kindInfo struct {
	name, code, message string
}

// info returns the kind's name, default code and default message. Unknown
// kinds are described as internal.
func (k Kind) info() kindInfo {
	infos := [...]kindInfo{
		KindInternal:             {"internal", "internal_error", "Internal server error."},
		KindMalformed:            {"malformed", "malformed_request", "The request is malformed."},
		KindUnauthenticated:      {"unauthenticated", "unauthenticated", "Authentication is required."},
		KindForbidden:            {"forbidden", "forbidden", "You are not allowed to perform this action."},
		KindNotFound:             {"not_found", "not_found", "Not found."},
		KindConflict:             {"conflict", "conflict", "The request conflicts with an existing resource."},
		KindTooLarge:             {"too_large", "payload_too_large", "The request body is too large."},
		KindUnsupportedMediaType: {"unsupported_media_type", "unsupported_media_type", "The request body must be JSON (Content-Type: application/json)."},
		KindInvalid:              {"invalid", "validation_failed", "The request is invalid."},
		KindRateLimited:          {"rate_limited", "rate_limited", "Too many requests. Try again later."},
		KindUnavailable:          {"unavailable", "service_unavailable", "The service is temporarily unavailable. Try again later."},
	}
	if k < 0 || int(k) >= len(infos) {
		return infos[KindInternal]
	}
	return infos[k]
}

// String returns a short lower-case name for the kind, for logs. Unknown
// kinds report as "internal".
func (k Kind) String() string { return k.info().name }

// DefaultCode returns the machine code used when an Error of this kind has
// none, e.g. "not_found" or "validation_failed".
func (k Kind) DefaultCode() string { return k.info().code }

// DefaultMessage returns the human message used when an Error of this kind
// has none.
func (k Kind) DefaultMessage() string { return k.info().message }

// Error is a domain error. Everything except Err is safe to show to the
// client; Err is the underlying cause, kept for logs and errors.Is/As.
type Error struct {
	// Kind classifies the error and decides the status code.
	Kind Kind
	// Code is the stable machine-readable code, e.g. "sender_not_active".
	Code string
	// Message is human-readable text that is safe to show to the client.
	Message string
	// Fields holds validation errors keyed by JSON field name.
	Fields map[string][]string
	// Details holds extra top-level keys rendered into the error body,
	// e.g. {"reason_code": "not_registered"}.
	Details map[string]any
	// RetryAfter, when positive, tells the client how long to wait before
	// retrying. It is rendered as a Retry-After header in whole seconds,
	// rounded up.
	RetryAfter time.Duration
	// Err is the cause. It is logged, never rendered.
	Err error
}

// Error formats the error for logs as "code: message: cause".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Code)
	if b.Len() == 0 {
		b.WriteString(e.Kind.DefaultCode())
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// New returns an Error of the given kind. An empty code or message is
// replaced by the kind's default. It makes an error value, as errors.New
// does, so it has the shape of one rather than New(Config) (*T, error).
func New(kind Kind, code, msg string) *Error {
	if code == "" {
		code = kind.DefaultCode()
	}
	if msg == "" {
		msg = kind.DefaultMessage()
	}
	return &Error{Kind: kind, Code: code, Message: msg}
}

// Wrap is New with a cause attached. The cause is logged, never shown.
func Wrap(err error, kind Kind, code, msg string) *Error {
	e := New(kind, code, msg)
	e.Err = err
	return e
}

// NotFound reports that the thing described by what does not exist, e.g.
// NotFound("sender number") has the message "Sender number not found.".
func NotFound(what string) *Error {
	if what == "" {
		return New(KindNotFound, "", "")
	}
	return New(KindNotFound, "not_found", sentence(what+" not found"))
}

// sentence capitalises s's first letter and ends it with a period, as
// every message of the error body is written.
func sentence(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:] + "."
}

// Unauthenticated reports missing or unusable credentials with the code
// "unauthenticated".
func Unauthenticated(msg string) *Error {
	return New(KindUnauthenticated, "unauthenticated", msg)
}

// Forbidden reports that the caller may not perform the action.
func Forbidden(code, msg string) *Error { return New(KindForbidden, code, msg) }

// Conflict reports that the request duplicates an existing resource.
func Conflict(code, msg string) *Error { return New(KindConflict, code, msg) }

// Invalid reports a validation failure without field errors, or a state of
// the resource that forbids the action (e.g. "sender_not_active").
func Invalid(code, msg string) *Error { return New(KindInvalid, code, msg) }

// RateLimited reports that a limit was hit; retryAfter tells the client when
// to try again (zero or negative omits the hint).
func RateLimited(code, msg string, retryAfter time.Duration) *Error {
	e := New(KindRateLimited, code, msg)
	e.RetryAfter = max(retryAfter, 0)
	return e
}

// Unavailable reports that a dependency failed; err is kept as the cause.
func Unavailable(err error) *Error {
	return Wrap(err, KindUnavailable, "", "")
}

// As finds the first *Error in err's chain.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// Validation collects field errors. The zero value is ready to use:
//
//	var v apperr.Validation
//	v.Add("phone", "must be an E.164 number")
//	if err := v.Err(); err != nil {
//		return err
//	}
type Validation struct {
	fields map[string][]string
}

// Add records a problem with the JSON field named field.
func (v *Validation) Add(field, msg string) {
	if v.fields == nil {
		v.fields = make(map[string][]string)
	}
	v.fields[field] = append(v.fields[field], msg)
}

// Text checks a line of text given for field: at most maxLen characters
// (runes), and no control characters (it is shown on one line, and
// Postgres text cannot hold a NUL). It records the first problem found and
// reports whether there was none.
func (v *Validation) Text(field, s string, maxLen int) bool {
	switch {
	case utf8.RuneCountInString(s) > maxLen:
		v.Add(field, fmt.Sprintf("must be at most %d characters", maxLen))
	case strings.ContainsFunc(s, unicode.IsControl):
		v.Add(field, "must not contain control characters")
	default:
		return true
	}
	return false
}

// TrimmedText is Text on s with its leading and trailing white space
// removed, for an optional line of text (a name, a description): it returns
// the trimmed text, or "" when that fails the check.
func (v *Validation) TrimmedText(field, s string, maxLen int) string {
	s = strings.TrimSpace(s)
	if !v.Text(field, s, maxLen) {
		return ""
	}
	return s
}

// PositiveInt reads s, a query parameter given for field, as a positive
// integer (strconv.ParseInt, base 10). It records "must be a positive
// integer" for anything else and returns what ParseInt read.
func (v *Validation) PositiveInt(field, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		v.Add(field, "must be a positive integer")
	}
	return n
}

// Has reports whether field already has a recorded problem, which lets
// callers skip checks that only make sense for a well-formed value.
func (v *Validation) Has(field string) bool {
	_, ok := v.fields[field]
	return ok
}

// Err returns nil when nothing was recorded, else an *Error of kind Invalid
// with code "validation_failed" and a copy of the field errors.
func (v *Validation) Err() error {
	if len(v.fields) == 0 {
		return nil
	}
	fields := make(map[string][]string, len(v.fields))
	for k, msgs := range v.fields {
		fields[k] = append([]string(nil), msgs...)
	}
	e := New(KindInvalid, "validation_failed", "The request is invalid.")
	e.Fields = fields
	return e
}
