package httpx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/metrics"
)

// testLimit keeps the body-limit tests small.
const testLimit = 256

var errDatabaseDown = errors.New("database down")

// logBuffer is a concurrency-safe log sink.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// thing is the request body of the test routes.
type thing struct {
	Name          string   `json:"name"`
	ExpiresInDays int      `json:"expires_in_days"`
	Enabled       bool     `json:"enabled"`
	Tags          []string `json:"tags"`
	Settings      struct {
		Limit uint `json:"limit"`
	} `json:"settings"`
}

// newEngine builds an engine with test routes, logging into the returned buffer.
func newEngine(t *testing.T, m *metrics.Metrics) (*gin.Engine, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	e := httpx.NewEngine(httpx.Config{
		Logger:       slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Metrics:      m,
		MaxBodyBytes: testLimit,
		Classify: func(err error) *apperr.Error {
			if errors.Is(err, errDatabaseDown) {
				return apperr.Unavailable(err)
			}
			return nil
		},
	})
	e.POST("/things", func(c *gin.Context) {
		var in thing
		if err := httpx.BindJSON(c, &in); err != nil {
			httpx.Fail(c, err)
			return
		}
		httpx.JSON(c, http.StatusCreated, in)
	})
	e.GET("/things/:id", func(c *gin.Context) {
		httpx.Fail(c, fmt.Errorf("get thing %s: %w", c.Param("id"), apperr.NotFound("thing")))
	})
	e.GET("/panic", func(c *gin.Context) {
		panic("boom: password=hunter2")
	})
	e.GET("/limited", func(c *gin.Context) {
		httpx.Fail(c, apperr.RateLimited("daily_limit_exceeded", "The daily limit is reached.", 1500*time.Millisecond))
	})
	e.GET("/details", func(c *gin.Context) {
		err := apperr.Invalid("sender_not_active", "The sender number is not active.")
		err.Details = map[string]any{"reason_code": "not_registered", "message": "shadowed", "attempts": 3}
		httpx.Fail(c, err)
	})
	e.GET("/validation", func(c *gin.Context) {
		var v apperr.Validation
		v.Add("phone", "must be an E.164 number")
		httpx.Fail(c, v.Err())
	})
	e.GET("/internal", func(c *gin.Context) {
		httpx.Fail(c, errors.New(`pq: syntax error at "SELECT secret FROM api_keys"`))
	})
	e.GET("/unavailable", func(c *gin.Context) {
		httpx.Fail(c, fmt.Errorf("list senders: %w", errDatabaseDown))
	})
	e.GET("/ok", func(c *gin.Context) {
		httpx.JSON(c, http.StatusOK, gin.H{
			"request_id":  httpx.RequestID(c),
			"context_id":  httpx.RequestIDFromContext(c.Request.Context()),
			"gin_ctx_id":  httpx.RequestIDFromContext(c),
			"with_status": true,
		})
	})
	return e, logs
}

// chunked hides the body's length so the request is sent without Content-Length.
type chunked struct{ io.Reader }

type request struct {
	method      string
	path        string
	contentType string
	body        io.Reader
	header      map[string]string
}

func (r request) do(t *testing.T, h http.Handler) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(r.method, r.path, r.body)
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func decodeEnvelope(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type = %q, want JSON; body %s", ct, rec.Body)
	}
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, rec.Body)
	}
	return body
}

func TestErrorResponses(t *testing.T) {
	t.Parallel()

	const jsonCT = "application/json"
	tests := []struct {
		name       string
		req        request
		wantStatus int
		wantCode   string
		wantKeys   []string            // exact top-level keys of the body
		wantFields map[string][]string // the "errors" member
		wantHeader map[string]string
		wantInBody map[string]any
		hidden     []string // must not appear in the body
	}{
		{
			name:       "unknown route",
			req:        request{method: http.MethodGet, path: "/nope"},
			wantStatus: http.StatusNotFound, wantCode: "not_found",
			wantKeys: []string{"message", "code", "request_id"},
		},
		{
			name:       "wrong method",
			req:        request{method: http.MethodDelete, path: "/things"},
			wantStatus: http.StatusMethodNotAllowed, wantCode: "method_not_allowed",
			wantKeys:   []string{"message", "code", "request_id"},
			wantHeader: map[string]string{"Allow": "POST"},
		},
		{
			name:       "not found from service",
			req:        request{method: http.MethodGet, path: "/things/42"},
			wantStatus: http.StatusNotFound, wantCode: "not_found",
			wantKeys:   []string{"message", "code", "request_id"},
			wantInBody: map[string]any{"message": "Thing not found."},
		},
		{
			name:       "malformed JSON",
			req:        request{method: http.MethodPost, path: "/things", contentType: jsonCT, body: strings.NewReader(`{"name": "a",}`)},
			wantStatus: http.StatusBadRequest, wantCode: "malformed_json",
			wantKeys: []string{"message", "code", "request_id"},
		},
		{
			name:       "truncated JSON",
			req:        request{method: http.MethodPost, path: "/things", contentType: jsonCT, body: strings.NewReader(`{"name": "a"`)},
			wantStatus: http.StatusBadRequest, wantCode: "malformed_json",
			wantKeys: []string{"message", "code", "request_id"},
		},
		{
			name:       "empty body",
			req:        request{method: http.MethodPost, path: "/things", contentType: jsonCT},
			wantStatus: http.StatusBadRequest, wantCode: "malformed_json",
			wantKeys:   []string{"message", "code", "request_id"},
			wantInBody: map[string]any{"message": "A JSON request body is required."},
		},
		{
			name:       "no body and no content type",
			req:        request{method: http.MethodPost, path: "/things"},
			wantStatus: http.StatusBadRequest, wantCode: "malformed_json",
			wantKeys: []string{"message", "code", "request_id"},
		},
		{
			name:       "trailing data",
			req:        request{method: http.MethodPost, path: "/things", contentType: jsonCT, body: strings.NewReader(`{"name":"a"} {"name":"b"}`)},
			wantStatus: http.StatusBadRequest, wantCode: "malformed_json",
			wantKeys: []string{"message", "code", "request_id"},
		},
		{
			name:       "top-level array",
			req:        request{method: http.MethodPost, path: "/things", contentType: jsonCT, body: strings.NewReader(`[1,2]`)},
			wantStatus: http.StatusBadRequest, wantCode: "malformed_json",
			wantKeys:   []string{"message", "code", "request_id"},
			wantInBody: map[string]any{"message": "The request body must be an object."},
		},
		{
			name:       "oversized with Content-Length",
			req:        request{method: http.MethodPost, path: "/things", contentType: jsonCT, body: strings.NewReader(`{"name":"` + strings.Repeat("x", testLimit) + `"}`)},
			wantStatus: http.StatusRequestEntityTooLarge, wantCode: "payload_too_large",
			wantKeys: []string{"message", "code", "request_id"},
		},
		{
			name:       "oversized chunked",
			req:        request{method: http.MethodPost, path: "/things", contentType: jsonCT, body: chunked{strings.NewReader(`{"name":"` + strings.Repeat("x", testLimit) + `"}`)}},
			wantStatus: http.StatusRequestEntityTooLarge, wantCode: "payload_too_large",
			wantKeys: []string{"message", "code", "request_id"},
		},
		{
			name:       "oversized chunked trailing whitespace",
			req:        request{method: http.MethodPost, path: "/things", contentType: jsonCT, body: chunked{strings.NewReader(`{"name":"a"}` + strings.Repeat(" ", testLimit))}},
			wantStatus: http.StatusRequestEntityTooLarge, wantCode: "payload_too_large",
			wantKeys: []string{"message", "code", "request_id"},
		},
		{
			name:       "oversized GET with Content-Length",
			req:        request{method: http.MethodGet, path: "/ok", contentType: jsonCT, body: strings.NewReader(strings.Repeat("x", testLimit+1))},
			wantStatus: http.StatusRequestEntityTooLarge, wantCode: "payload_too_large",
			wantKeys: []string{"message", "code", "request_id"},
		},
		{
			name:       "form content type",
			req:        request{method: http.MethodPost, path: "/things", contentType: "application/x-www-form-urlencoded", body: strings.NewReader(`name=a`)},
			wantStatus: http.StatusUnsupportedMediaType, wantCode: "unsupported_media_type",
			wantKeys: []string{"message", "code", "request_id"},
		},
		{
			name:       "missing content type with body",
			req:        request{method: http.MethodPost, path: "/things", body: strings.NewReader(`{"name":"a"}`)},
			wantStatus: http.StatusUnsupportedMediaType, wantCode: "unsupported_media_type",
			wantKeys: []string{"message", "code", "request_id"},
		},
		{
			name:       "type mismatch integer",
			req:        request{method: http.MethodPost, path: "/things", contentType: jsonCT, body: strings.NewReader(`{"expires_in_days": "thirty"}`)},
			wantStatus: http.StatusUnprocessableEntity, wantCode: "validation_failed",
			wantKeys:   []string{"message", "code", "errors", "request_id"},
			wantFields: map[string][]string{"expires_in_days": {"must be an integer"}},
		},
		{
			name:       "NUL in a string",
			req:        request{method: http.MethodPost, path: "/things", contentType: jsonCT, body: strings.NewReader(`{"name": "a\u0000b"}`)},
			wantStatus: http.StatusUnprocessableEntity, wantCode: "validation_failed",
			wantKeys:   []string{"message", "code", "errors", "request_id"},
			wantFields: map[string][]string{"name": {`must not contain the NUL character (\u0000)`}},
		},
		{
			name:       "NUL in an array's string",
			req:        request{method: http.MethodPost, path: "/things", contentType: jsonCT, body: strings.NewReader(`{"tags": ["ok", "\u0000"]}`)},
			wantStatus: http.StatusUnprocessableEntity, wantCode: "validation_failed",
			wantKeys:   []string{"message", "code", "errors", "request_id"},
			wantFields: map[string][]string{"tags.1": {`must not contain the NUL character (\u0000)`}},
		},
		{
			name:       "type mismatch string",
			req:        request{method: http.MethodPost, path: "/things", contentType: jsonCT, body: strings.NewReader(`{"name": 7}`)},
			wantStatus: http.StatusUnprocessableEntity, wantCode: "validation_failed",
			wantKeys:   []string{"message", "code", "errors", "request_id"},
			wantFields: map[string][]string{"name": {"must be a string"}},
		},
		{
			name:       "type mismatch boolean",
			req:        request{method: http.MethodPost, path: "/things", contentType: jsonCT, body: strings.NewReader(`{"enabled": "yes"}`)},
			wantStatus: http.StatusUnprocessableEntity, wantCode: "validation_failed",
			wantKeys:   []string{"message", "code", "errors", "request_id"},
			wantFields: map[string][]string{"enabled": {"must be a boolean"}},
		},
		{
			name:       "type mismatch array",
			req:        request{method: http.MethodPost, path: "/things", contentType: jsonCT, body: strings.NewReader(`{"tags": "a,b"}`)},
			wantStatus: http.StatusUnprocessableEntity, wantCode: "validation_failed",
			wantKeys:   []string{"message", "code", "errors", "request_id"},
			wantFields: map[string][]string{"tags": {"must be an array"}},
		},
		{
			name:       "type mismatch nested",
			req:        request{method: http.MethodPost, path: "/things", contentType: jsonCT, body: strings.NewReader(`{"settings": {"limit": -1}}`)},
			wantStatus: http.StatusUnprocessableEntity, wantCode: "validation_failed",
			wantKeys:   []string{"message", "code", "errors", "request_id"},
			wantFields: map[string][]string{"settings.limit": {"must be a non-negative integer"}},
		},
		{
			name:       "validation from service",
			req:        request{method: http.MethodGet, path: "/validation"},
			wantStatus: http.StatusUnprocessableEntity, wantCode: "validation_failed",
			wantKeys:   []string{"message", "code", "errors", "request_id"},
			wantFields: map[string][]string{"phone": {"must be an E.164 number"}},
			wantInBody: map[string]any{"message": "The request is invalid."},
		},
		{
			name:       "panic",
			req:        request{method: http.MethodGet, path: "/panic"},
			wantStatus: http.StatusInternalServerError, wantCode: "internal_error",
			wantKeys:   []string{"message", "code", "request_id"},
			wantInBody: map[string]any{"message": "Internal server error."},
			hidden:     []string{"boom", "hunter2", "goroutine", ".go:"},
		},
		{
			name:       "plain error",
			req:        request{method: http.MethodGet, path: "/internal"},
			wantStatus: http.StatusInternalServerError, wantCode: "internal_error",
			wantKeys:   []string{"message", "code", "request_id"},
			wantInBody: map[string]any{"message": "Internal server error."},
			hidden:     []string{"SELECT", "api_keys", "pq:"},
		},
		{
			name:       "classified error",
			req:        request{method: http.MethodGet, path: "/unavailable"},
			wantStatus: http.StatusServiceUnavailable, wantCode: "service_unavailable",
			wantKeys: []string{"message", "code", "request_id"},
			hidden:   []string{"database down"},
		},
		{
			name:       "retry after",
			req:        request{method: http.MethodGet, path: "/limited"},
			wantStatus: http.StatusTooManyRequests, wantCode: "daily_limit_exceeded",
			wantKeys:   []string{"message", "code", "request_id"},
			wantHeader: map[string]string{"Retry-After": "2"},
		},
		{
			name:       "details",
			req:        request{method: http.MethodGet, path: "/details"},
			wantStatus: http.StatusUnprocessableEntity, wantCode: "sender_not_active",
			wantKeys:   []string{"message", "code", "attempts", "reason_code", "request_id"},
			wantInBody: map[string]any{"reason_code": "not_registered", "attempts": 3.0, "message": "The sender number is not active."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, _ := newEngine(t, nil)
			rec := tt.req.do(t, e)

			if rec.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tt.wantStatus, rec.Body)
			}
			rawBody := rec.Body.String()
			body := decodeEnvelope(t, rec)
			if body["code"] != tt.wantCode {
				t.Errorf("code = %v, want %q", body["code"], tt.wantCode)
			}
			if msg, _ := body["message"].(string); msg == "" {
				t.Error("message is empty")
			}
			if id := rec.Header().Get(httpx.RequestIDHeader); id == "" || body["request_id"] != id {
				t.Errorf("request_id = %v, header %q", body["request_id"], id)
			}
			if got := slices.Sorted(maps.Keys(body)); !slices.Equal(got, slices.Sorted(slices.Values(tt.wantKeys))) {
				t.Errorf("body keys = %v, want %v", got, tt.wantKeys)
			}
			if tt.wantFields != nil {
				var fields map[string][]string
				raw, _ := json.Marshal(body["errors"])
				_ = json.Unmarshal(raw, &fields)
				if !maps.EqualFunc(fields, tt.wantFields, slices.Equal) {
					t.Errorf("errors = %v, want %v", fields, tt.wantFields)
				}
			}
			for k, want := range tt.wantHeader {
				if got := rec.Header().Get(k); got != want {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
			for k, want := range tt.wantInBody {
				if body[k] != want {
					t.Errorf("body[%q] = %v, want %v", k, body[k], want)
				}
			}
			for _, s := range tt.hidden {
				if strings.Contains(rawBody, s) {
					t.Errorf("body leaks %q: %s", s, rawBody)
				}
			}
			if !strings.HasPrefix(rawBody, `{"message":`) {
				t.Errorf("body does not start with the message: %s", rawBody)
			}
		})
	}
}

func TestBindJSONAccepts(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name        string
		contentType string
		body        io.Reader
		wantName    string
	}{
		{"plain", "application/json", strings.NewReader(`{"name":"a"}`), "a"},
		{"charset", "application/json; charset=utf-8", strings.NewReader(`{"name":"b"}`), "b"},
		{"upper case", "Application/JSON", strings.NewReader(`{"name":"c"}`), "c"},
		{"structured suffix", "application/merge-patch+json", strings.NewReader(`{"name":"d"}`), "d"},
		{"unknown fields ignored", "application/json", strings.NewReader(`{"name":"e","status":"active","id":9}`), "e"},
		{"trailing whitespace", "application/json", strings.NewReader("{\"name\":\"f\"}\n\n"), "f"},
		{"chunked", "application/json", chunked{strings.NewReader(`{"name":"g"}`)}, "g"},
		{"exactly at limit", "application/json", strings.NewReader(`{"name":"` + strings.Repeat("h", testLimit-11) + `"}`), strings.Repeat("h", testLimit-11)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, _ := newEngine(t, nil)
			rec := request{method: http.MethodPost, path: "/things", contentType: tt.contentType, body: tt.body}.do(t, e)
			if rec.Code != http.StatusCreated {
				t.Fatalf("status = %d; body %s", rec.Code, rec.Body)
			}
			var got thing
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if got.Name != tt.wantName {
				t.Errorf("name = %q, want %q", got.Name, tt.wantName)
			}
		})
	}
}

func TestRequestID(t *testing.T) {
	t.Parallel()

	generated := regexp.MustCompile(`^[0-9a-f]{32}$`)
	sane := "abc-123_XYZ.4"
	tests := []struct {
		name     string
		path     string
		method   string
		clientID string
		wantEcho bool
	}{
		{"generated on success", "/ok", http.MethodGet, "", false},
		{"echoed on success", "/ok", http.MethodGet, sane, true},
		{"echoed at max length", "/ok", http.MethodGet, strings.Repeat("a", 128), true},
		{"too long replaced", "/ok", http.MethodGet, strings.Repeat("a", 129), false},
		{"bad characters replaced", "/ok", http.MethodGet, "abc def", false},
		{"header injection replaced", "/ok", http.MethodGet, "abc<script>", false},
		{"echoed on 404", "/nope", http.MethodGet, sane, true},
		{"generated on 404", "/nope", http.MethodGet, "", false},
		{"generated on 405", "/ok", http.MethodPost, "", false},
		{"echoed on 405", "/ok", http.MethodPost, sane, true},
		{"generated on panic", "/panic", http.MethodGet, "", false},
		{"echoed on panic", "/panic", http.MethodGet, sane, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, _ := newEngine(t, nil)
			req := request{method: tt.method, path: tt.path}
			if tt.clientID != "" {
				req.header = map[string]string{httpx.RequestIDHeader: tt.clientID}
			}
			rec := req.do(t, e)
			got := rec.Header().Get(httpx.RequestIDHeader)
			switch {
			case tt.wantEcho && got != tt.clientID:
				t.Errorf("request id = %q, want echo of %q", got, tt.clientID)
			case !tt.wantEcho && !generated.MatchString(got):
				t.Errorf("request id = %q, want a generated id", got)
			}
			body := decodeEnvelope(t, rec)
			if body["request_id"] != got {
				t.Errorf("body request_id = %v, header %q", body["request_id"], got)
			}
			if rec.Code == http.StatusOK {
				for _, k := range []string{"context_id", "gin_ctx_id"} {
					if body[k] != got {
						t.Errorf("%s = %v, want %q", k, body[k], got)
					}
				}
			}
		})
	}
}

func TestRequestIDsDiffer(t *testing.T) {
	t.Parallel()

	e, _ := newEngine(t, nil)
	a := request{method: http.MethodGet, path: "/ok"}.do(t, e).Header().Get(httpx.RequestIDHeader)
	b := request{method: http.MethodGet, path: "/ok"}.do(t, e).Header().Get(httpx.RequestIDHeader)
	if a == b {
		t.Errorf("two requests got the same id %q", a)
	}
}

// logLines decodes JSON log lines.
func logLines(t *testing.T, logs *logBuffer) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for line := range strings.Lines(logs.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, line)
		}
		lines = append(lines, m)
	}
	return lines
}

func findLog(lines []map[string]any, msg string) map[string]any {
	for _, l := range lines {
		if l["msg"] == msg {
			return l
		}
	}
	return nil
}

func TestAccessLog(t *testing.T) {
	t.Parallel()

	e, logs := newEngine(t, nil)
	rec := request{
		method: http.MethodGet,
		path:   "/things/42?api_key=secret",
		header: map[string]string{"X-Api-Key": "sk_live_secret", httpx.RequestIDHeader: "req-1"},
	}.do(t, e)
	if rec.Code != http.StatusNotFound {
		t.Fatalf("status = %d", rec.Code)
	}
	if strings.Contains(logs.String(), "secret") {
		t.Errorf("logs leak a query string or header: %s", logs)
	}
	l := findLog(logLines(t, logs), "http request")
	if l == nil {
		t.Fatalf("no access log line in %s", logs)
	}
	want := map[string]any{
		"level": "INFO", "method": "GET", "route": "/things/:id", "path": "/things/42",
		"status": 404.0, "request_id": "req-1", "client_ip": "192.0.2.1",
	}
	for k, v := range want {
		if l[k] != v {
			t.Errorf("log %s = %v, want %v", k, l[k], v)
		}
	}
	for _, k := range []string{"duration_ms", "bytes"} {
		if _, ok := l[k].(float64); !ok {
			t.Errorf("log %s = %v, want a number", k, l[k])
		}
	}
}

func TestFailureLogs(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		path      string
		wantMsg   string
		wantLevel string
		wantIn    []string
	}{
		{"panic", "/panic", "panic while serving request", "ERROR", []string{"boom", "goroutine", "httpx_test.go"}},
		{"internal", "/internal", "request failed", "ERROR", []string{"SELECT secret FROM api_keys"}},
		{"unavailable", "/unavailable", "request failed", "ERROR", []string{"list senders: database down"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, logs := newEngine(t, nil)
			request{method: http.MethodGet, path: tt.path}.do(t, e)
			l := findLog(logLines(t, logs), tt.wantMsg)
			if l == nil {
				t.Fatalf("no %q log in %s", tt.wantMsg, logs)
			}
			if l["level"] != tt.wantLevel {
				t.Errorf("level = %v, want %s", l["level"], tt.wantLevel)
			}
			raw, _ := json.Marshal(l)
			for _, s := range tt.wantIn {
				if !strings.Contains(string(raw), s) {
					t.Errorf("log lacks %q: %s", s, raw)
				}
			}
		})
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()

	m := metrics.New()
	e, _ := newEngine(t, m)
	e.GET("/metrics", gin.WrapH(m.Handler()))

	request{method: http.MethodGet, path: "/things/7"}.do(t, e)
	request{method: http.MethodGet, path: "/panic"}.do(t, e)
	request{method: http.MethodGet, path: "/nope/at/all"}.do(t, e)
	rec := request{method: http.MethodGet, path: "/metrics"}.do(t, e)
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d", rec.Code)
	}
	for _, want := range []string{
		`http_requests_total{method="GET",route="/things/:id",status="404"} 1`,
		`http_requests_total{method="GET",route="/panic",status="500"} 1`,
		`http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`http_request_duration_seconds_count{method="GET",route="/things/:id",status="404"} 1`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestNewServer(t *testing.T) {
	t.Parallel()

	srv := httpx.NewServer(":0", http.NotFoundHandler())
	if srv.ReadHeaderTimeout != 5*time.Second || srv.ReadTimeout != 30*time.Second ||
		srv.WriteTimeout != 60*time.Second || srv.IdleTimeout != 120*time.Second ||
		srv.MaxHeaderBytes != 64<<10 || srv.Addr != ":0" {
		t.Errorf("unexpected server settings: %+v", srv)
	}
}

func TestServeGracefulShutdown(t *testing.T) {
	t.Parallel()

	e := httpx.NewEngine(httpx.Config{Logger: slog.New(slog.DiscardHandler)})
	// The handler answers once shutdown has begun, so that the request is in
	// flight while it runs, however slowly the machine goes.
	started, shuttingDown := make(chan struct{}), make(chan struct{})
	e.GET("/slow", func(c *gin.Context) {
		close(started)
		<-shuttingDown
		httpx.JSON(c, http.StatusOK, gin.H{"done": true})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	served := make(chan error, 1)
	srv := httpx.NewServer(ln.Addr().String(), e)
	srv.RegisterOnShutdown(func() { close(shuttingDown) })
	go func() { served <- httpx.Serve(ctx, srv, ln, 5*time.Second) }()

	type result struct {
		status int
		body   string
		err    error
	}
	// t.Context(), not ctx: cancelling ctx is the shutdown under test.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+ln.Addr().String()+"/slow", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan result, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- result{status: resp.StatusCode, body: string(b), err: err}
	}()

	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("request never reached the handler")
	}
	cancel()

	var r result
	select {
	case r = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the in-flight request never completed: shutdown did not begin")
	}
	if r.err != nil || r.status != http.StatusOK || r.body != `{"done":true}` {
		t.Errorf("in-flight request: status %d body %q err %v", r.status, r.body, r.err)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after shutdown")
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Error("listener still accepts connections after shutdown")
	}
}

func TestServeShutdownTimeout(t *testing.T) {
	t.Parallel()

	release := make(chan struct{})
	started := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
	})
	defer close(release)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- httpx.Serve(ctx, httpx.NewServer("", h), ln, 50*time.Millisecond) }()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+ln.Addr().String()+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	cancel()
	select {
	case err := <-served:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Serve = %v, want a deadline error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not give up after the shutdown timeout")
	}
}
