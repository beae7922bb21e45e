package client_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/bizmsg/platform/client"
)

// Check turns a success into nil, the service's error envelope into an
// *Error, and any other answer into an *UnexpectedResponseError.
func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		body   string
		// code is the *Error's code, "" for no *Error; unexpected says an
		// *UnexpectedResponseError is wanted.
		code       string
		unexpected bool
		text       string
	}{
		{name: "accepted", status: http.StatusAccepted, body: `{"data":{}}`},
		{name: "no content", status: http.StatusNoContent},
		{name: "not modified", status: http.StatusNotModified},
		{
			name: "validation", status: http.StatusUnprocessableEntity, code: "validation_failed",
			body: `{"message":"Please correct the fields.","code":"validation_failed","errors":{"to_phone":["is required"]},"request_id":"r1"}`,
			text: "bizmsg: validation_failed: Please correct the fields. (request r1)",
		},
		{
			name: "daily limit", status: http.StatusTooManyRequests, code: "daily_limit_exceeded",
			body: `{"message":"Limit reached.","code":"daily_limit_exceeded","daily_limit":5,"resets_at":"2026-11-23T00:00:00Z","request_id":"r2"}`,
			text: "daily_limit_exceeded",
		},
		{name: "proxy page", status: http.StatusBadGateway, body: "<html>bad gateway</html>", unexpected: true, text: "unexpected 502 Bad Gateway"},
		{name: "empty body", status: http.StatusInternalServerError, unexpected: true, text: "unexpected 500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := client.Check(tt.status, []byte(tt.body))
			var apiErr *client.Error
			var unexpected *client.UnexpectedResponseError
			switch {
			case tt.code == "" && !tt.unexpected:
				if err != nil {
					t.Fatalf("Check(%d) = %v, want nil", tt.status, err)
				}
				return
			case tt.code != "":
				if !errors.As(err, &apiErr) || apiErr.Code != tt.code {
					t.Fatalf("Check(%d) = %#v, want *Error with code %s", tt.status, err, tt.code)
				}
			case !errors.As(err, &unexpected) || unexpected.Status != tt.status:
				t.Fatalf("Check(%d) = %#v, want *UnexpectedResponseError", tt.status, err)
			}
			if !strings.Contains(err.Error(), tt.text) {
				t.Fatalf("error %q lacks %q", err, tt.text)
			}
		})
	}
	// The 422's field errors and the 429's extra members decode too.
	var e *client.Error
	err := client.Check(http.StatusTooManyRequests, []byte(`{"message":"m","code":"daily_limit_exceeded","daily_limit":5,"request_id":"r"}`))
	if !errors.As(err, &e) || e.DailyLimit == nil || *e.DailyLimit != 5 {
		t.Fatalf("daily_limit not decoded: %#v", err)
	}
}
