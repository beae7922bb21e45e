package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// WithAPIKey authenticates every request with an API key (X-Api-Key), as
// the Tenant API requires.
func WithAPIKey(key string) ClientOption {
	return WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("X-Api-Key", key)
		return nil
	})
}

// WithBearerToken authenticates every request with a Central API access
// token (Authorization: Bearer).
func WithBearerToken(token string) ClientOption {
	return WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+token)
		return nil
	})
}

// Error makes the service's error envelope an error: its code, message and
// request id (the one to quote when asking why).
func (e *Error) Error() string {
	return fmt.Sprintf("bizmsg: %s: %s (request %s)", e.Code, e.Message, e.RequestId)
}

// UnexpectedResponseError is an answer that is neither a success nor the
// service's error envelope (a proxy's error page, an empty body).
type UnexpectedResponseError struct {
	// Status is the HTTP status, Body the body as received.
	Status int
	Body   []byte
}

// Error says the status and the start of the body.
func (e *UnexpectedResponseError) Error() string {
	body := e.Body
	if len(body) > 200 {
		body = body[:200]
	}
	return fmt.Sprintf("bizmsg: unexpected %d %s: %q", e.Status, http.StatusText(e.Status), body)
}

// Check returns nil for a 2xx or 304 status, and otherwise the error the
// body carries: an *Error (every error of both APIs is that envelope), or
// an *UnexpectedResponseError when the body is not one. Use it with any
// response: client.Check(rsp.StatusCode(), rsp.Body).
func Check(status int, body []byte) error {
	if status >= 200 && status < 300 || status == http.StatusNotModified {
		return nil
	}
	var e Error
	if err := json.Unmarshal(body, &e); err != nil || e.Code == "" {
		return &UnexpectedResponseError{Status: status, Body: body}
	}
	return &e
}
