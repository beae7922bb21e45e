package apperr_test

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/apperr"
)

func TestConstructors(t *testing.T) {
	t.Parallel()

	cause := errors.New("dial tcp: connection refused")
	tests := []struct {
		name        string
		err         *apperr.Error
		wantKind    apperr.Kind
		wantCode    string
		wantMessage string
		wantRetry   time.Duration
		wantCause   error
	}{
		{"New defaults", apperr.New(apperr.KindConflict, "", ""), apperr.KindConflict, "conflict", apperr.KindConflict.DefaultMessage(), 0, nil},
		{"New explicit", apperr.New(apperr.KindMalformed, "bad_cursor", "The cursor is invalid."), apperr.KindMalformed, "bad_cursor", "The cursor is invalid.", 0, nil},
		{"Wrap", apperr.Wrap(cause, apperr.KindInternal, "", ""), apperr.KindInternal, "internal_error", "Internal server error.", 0, cause},
		{"NotFound", apperr.NotFound("sender number"), apperr.KindNotFound, "not_found", "Sender number not found.", 0, nil},
		{"NotFound empty", apperr.NotFound(""), apperr.KindNotFound, "not_found", "Not found.", 0, nil},
		{"Unauthenticated", apperr.Unauthenticated("The API key is revoked."), apperr.KindUnauthenticated, "unauthenticated", "The API key is revoked.", 0, nil},
		{"Unauthenticated default", apperr.Unauthenticated(""), apperr.KindUnauthenticated, "unauthenticated", "Authentication is required.", 0, nil},
		{"Forbidden", apperr.Forbidden("missing_scope", "The key lacks the messages:send scope."), apperr.KindForbidden, "missing_scope", "The key lacks the messages:send scope.", 0, nil},
		{"Conflict", apperr.Conflict("sender_exists", "The phone is already registered."), apperr.KindConflict, "sender_exists", "The phone is already registered.", 0, nil},
		{"Invalid", apperr.Invalid("sender_not_active", "The sender number is not active."), apperr.KindInvalid, "sender_not_active", "The sender number is not active.", 0, nil},
		{"RateLimited", apperr.RateLimited("daily_limit_exceeded", "Daily limit reached.", 90*time.Second), apperr.KindRateLimited, "daily_limit_exceeded", "Daily limit reached.", 90 * time.Second, nil},
		{"RateLimited negative retry", apperr.RateLimited("", "", -time.Second), apperr.KindRateLimited, "rate_limited", apperr.KindRateLimited.DefaultMessage(), 0, nil},
		{"Unavailable", apperr.Unavailable(cause), apperr.KindUnavailable, "service_unavailable", apperr.KindUnavailable.DefaultMessage(), 0, cause},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := tt.err
			if e.Kind != tt.wantKind {
				t.Errorf("Kind = %v, want %v", e.Kind, tt.wantKind)
			}
			if e.Code != tt.wantCode {
				t.Errorf("Code = %q, want %q", e.Code, tt.wantCode)
			}
			if e.Message != tt.wantMessage {
				t.Errorf("Message = %q, want %q", e.Message, tt.wantMessage)
			}
			if e.RetryAfter != tt.wantRetry {
				t.Errorf("RetryAfter = %v, want %v", e.RetryAfter, tt.wantRetry)
			}
			if got := e.Unwrap(); got != tt.wantCause { //nolint:errorlint // Unwrap must return the cause itself
				t.Errorf("Unwrap() = %v, want %v", got, tt.wantCause)
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		err  *apperr.Error
		want string
	}{
		{"code and message", apperr.NotFound("api key"), "not_found: Api key not found."},
		{"with cause", apperr.Wrap(io.ErrUnexpectedEOF, apperr.KindUnavailable, "db_down", "Database unavailable."), "db_down: Database unavailable.: unexpected EOF"},
		{"zero value", &apperr.Error{}, "internal_error"},
		{"literal without code", &apperr.Error{Kind: apperr.KindForbidden, Message: "No."}, "forbidden: No."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAs(t *testing.T) {
	t.Parallel()

	target := apperr.NotFound("message")
	tests := []struct {
		name   string
		err    error
		want   *apperr.Error
		wantOK bool
	}{
		{"direct", target, target, true},
		{"wrapped", fmt.Errorf("get message 42: %w", target), target, true},
		{"joined", errors.Join(io.EOF, target), target, true},
		{"plain", io.EOF, nil, false},
		{"nil", nil, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := apperr.As(tt.err)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("As() = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestErrorsIsThroughCause(t *testing.T) {
	t.Parallel()

	err := fmt.Errorf("send: %w", apperr.Unavailable(io.ErrClosedPipe))
	if !errors.Is(err, io.ErrClosedPipe) {
		t.Fatal("errors.Is does not reach the cause")
	}
}

func TestKindDefaults(t *testing.T) {
	t.Parallel()

	tests := []struct {
		kind     apperr.Kind
		wantName string
		wantCode string
	}{
		{apperr.KindInternal, "internal", "internal_error"},
		{apperr.KindMalformed, "malformed", "malformed_request"},
		{apperr.KindUnauthenticated, "unauthenticated", "unauthenticated"},
		{apperr.KindForbidden, "forbidden", "forbidden"},
		{apperr.KindNotFound, "not_found", "not_found"},
		{apperr.KindConflict, "conflict", "conflict"},
		{apperr.KindTooLarge, "too_large", "payload_too_large"},
		{apperr.KindUnsupportedMediaType, "unsupported_media_type", "unsupported_media_type"},
		{apperr.KindInvalid, "invalid", "validation_failed"},
		{apperr.KindRateLimited, "rate_limited", "rate_limited"},
		{apperr.KindUnavailable, "unavailable", "service_unavailable"},
		{apperr.Kind(-1), "internal", "internal_error"},
		{apperr.Kind(999), "internal", "internal_error"},
	}
	for _, tt := range tests {
		t.Run(tt.wantName, func(t *testing.T) {
			t.Parallel()
			if got := tt.kind.String(); got != tt.wantName {
				t.Errorf("String() = %q, want %q", got, tt.wantName)
			}
			if got := tt.kind.DefaultCode(); got != tt.wantCode {
				t.Errorf("DefaultCode() = %q, want %q", got, tt.wantCode)
			}
			if tt.kind.DefaultMessage() == "" {
				t.Error("DefaultMessage() is empty")
			}
		})
	}
}

func TestValidation(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		add  [][2]string
		want map[string][]string
	}{
		{"none", nil, nil},
		{"one", [][2]string{{"phone", "must be an E.164 number"}}, map[string][]string{"phone": {"must be an E.164 number"}}},
		{
			"several",
			[][2]string{{"name", "is required"}, {"phone", "is required"}, {"name", "must be at most 64 characters"}},
			map[string][]string{"name": {"is required", "must be at most 64 characters"}, "phone": {"is required"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var v apperr.Validation
			for _, a := range tt.add {
				v.Add(a[0], a[1])
			}
			err := v.Err()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Err() = %v, want nil", err)
				}
				return
			}
			e, ok := apperr.As(err)
			if !ok {
				t.Fatalf("Err() = %T, want *apperr.Error", err)
			}
			if e.Kind != apperr.KindInvalid || e.Code != "validation_failed" || e.Message != "The request is invalid." {
				t.Errorf("got kind %v code %q message %q", e.Kind, e.Code, e.Message)
			}
			if !maps.EqualFunc(e.Fields, tt.want, slices.Equal) {
				t.Errorf("Fields = %v, want %v", e.Fields, tt.want)
			}
			for field := range tt.want {
				if !v.Has(field) {
					t.Errorf("Has(%q) = false", field)
				}
			}
		})
	}
}

func TestValidationErrIsSnapshot(t *testing.T) {
	t.Parallel()

	var v apperr.Validation
	v.Add("phone", "is required")
	e, _ := apperr.As(v.Err())
	v.Add("phone", "must be an E.164 number")
	v.Add("name", "is required")
	if len(e.Fields) != 1 || len(e.Fields["phone"]) != 1 {
		t.Errorf("earlier Err() result changed after Add: %v", e.Fields)
	}
	if v.Has("missing") {
		t.Error("Has reports a field never added")
	}
}

func TestValidationTrimmedText(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name, in, want string
		problem        bool
	}{
		{"trimmed", "  Help \n", "Help", false},
		{"empty", "   ", "", false},
		{"at the limit after trimming", " " + "abcde" + " ", "abcde", false},
		{"too long", "abcdef", "", true},
		{"control character", "a\x00b", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var v apperr.Validation
			if got := v.TrimmedText("description", tt.in, 5); got != tt.want {
				t.Errorf("TrimmedText(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if v.Has("description") != tt.problem {
				t.Errorf("Has(description) = %v, want %v", v.Has("description"), tt.problem)
			}
		})
	}
}

func TestValidationPositiveInt(t *testing.T) {
	t.Parallel()

	tests := []struct {
		in      string
		want    int64
		problem bool
	}{
		{"42", 42, false},
		{"0", 0, true},
		{"-3", -3, true},
		{"x", 0, true},
		{"", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			var v apperr.Validation
			if got := v.PositiveInt("sender_number_id", tt.in); got != tt.want {
				t.Errorf("PositiveInt(%q) = %d, want %d", tt.in, got, tt.want)
			}
			if v.Has("sender_number_id") != tt.problem {
				t.Errorf("Has(sender_number_id) = %v, want %v", v.Has("sender_number_id"), tt.problem)
			}
		})
	}
}
