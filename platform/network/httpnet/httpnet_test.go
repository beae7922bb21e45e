package httpnet_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/network/httpnet"
	"github.com/bizmsg/platform/platform/network/networktest"
)

const secret = "test-network-secret-0123456789abcdef"

// fixture is one test's peer: httpnet.Handler over the built-in network on a
// database of its own, behind an httptest server whose first `fail` calls
// are answered by `failWith` instead (after the real handler ran, when
// `passThrough` is set: an answer lost on the way back).
type fixture struct {
	t   *testing.T
	net *builtin.Network
	srv *httptest.Server

	calls atomic.Int32
	fail  atomic.Int32

	mu          sync.Mutex
	failWith    func(w http.ResponseWriter, r *http.Request)
	passThrough bool
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	d, _ := dbtest.Migrated(t)
	f := &fixture{t: t, net: networktest.Builtin(t, builtin.Config{DB: d})}
	h, err := httpnet.NewHandler(httpnet.HandlerConfig{Network: f.net, Secret: secret,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		f.mu.Lock()
		failWith, passThrough := f.failWith, f.passThrough
		f.mu.Unlock()
		if f.fail.Add(-1) >= 0 && failWith != nil {
			if passThrough {
				h.ServeHTTP(httptest.NewRecorder(), r)
			}
			failWith(w, r)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// failFirst makes the next n calls answer with fn.
func (f *fixture) failFirst(n int32, fn func(w http.ResponseWriter, r *http.Request)) {
	f.mu.Lock()
	f.failWith = fn
	f.mu.Unlock()
	f.fail.Store(n)
}

// lostAnswers makes the failing calls reach the network before failing.
func (f *fixture) lostAnswers() {
	f.mu.Lock()
	f.passThrough = true
	f.mu.Unlock()
}

// client returns a client of the peer with fast backoff, tuned by opts.
func (f *fixture) client(opts ...func(*httpnet.Config)) *httpnet.Client {
	f.t.Helper()
	cfg := httpnet.Config{BaseURL: f.srv.URL, Secret: secret, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := httpnet.New(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fixture) account(p string, spec builtin.AccountSpec) {
	f.t.Helper()
	spec.Phone = p
	if _, err := f.net.AddAccount(context.Background(), spec); err != nil {
		f.t.Fatal(err)
	}
}

var ready = builtin.AccountSpec{Verified: true, PhoneVerified: true, ReceivingEnabled: true}

func ph(i int) string { return fmt.Sprintf("+1415555%04d", i) }

func status(code int) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, `{"code":"unavailable","message":"try later"}`)
	}
}

func TestLookupAndVerified(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.account(ph(1), ready)
	f.account(ph(2), ready)
	f.account(ph(3), builtin.AccountSpec{Verified: false, PhoneVerified: false, ReceivingEnabled: true})
	f.account(ph(4), builtin.AccountSpec{Verified: true, PhoneVerified: true, ReceivingEnabled: false})
	f.account(ph(5), ready)
	if err := f.net.Block(ctx, ph(5), ph(1)); err != nil {
		t.Fatal(err)
	}
	c := f.client()

	tests := []struct {
		phone, sender string
		reason        string
		verified      bool
	}{
		{ph(2), ph(1), network.CodeOK, true},
		{ph(2), "", network.CodeOK, true},
		{ph(3), ph(1), network.CodePhoneUnverified, false},
		{ph(4), ph(1), network.CodeReceivingDisabled, true},
		{ph(5), ph(1), network.CodeBlockedSender, true},
		{ph(5), "", network.CodeOK, true},
	}
	for _, tt := range tests {
		t.Run(tt.phone+"_from_"+tt.sender, func(t *testing.T) {
			t.Parallel()
			a, err := c.Lookup(ctx, tt.phone, tt.sender)
			if err != nil {
				t.Fatal(err)
			}
			want, err := f.net.Lookup(ctx, tt.phone, tt.sender)
			if err != nil {
				t.Fatal(err)
			}
			if a.ReasonCode() != tt.reason || a.ID != want.ID || a.Phone != tt.phone || a.Verified != tt.verified ||
				(a.VerifiedAt == nil) != !tt.verified || (a.PhoneVerifiedAt == nil) != (want.PhoneVerifiedAt == nil) {
				t.Fatalf("lookup = %+v, want reason %s like %+v", a, tt.reason, want)
			}
			// Every field crosses the wire, the times to the nanosecond, in UTC.
			if !reflect.DeepEqual(a, want) {
				t.Fatalf("lookup over HTTP = %+v\nbuilt-in network   = %+v", a, want)
			}
			v, err := c.Verified(ctx, tt.phone)
			if err != nil || v != tt.verified {
				t.Fatalf("verified = %v, %v; want %v", v, err, tt.verified)
			}
		})
	}
	t.Run("not registered", func(t *testing.T) {
		t.Parallel()
		if _, err := c.Lookup(ctx, ph(99), ph(1)); !errors.Is(err, network.ErrNotFound) {
			t.Fatalf("lookup err = %v, want ErrNotFound", err)
		}
		if _, err := c.Verified(ctx, ph(99)); !errors.Is(err, network.ErrNotFound) {
			t.Fatalf("verified err = %v, want ErrNotFound", err)
		}
	})
	t.Run("invalid phone is a refusal", func(t *testing.T) {
		t.Parallel()
		var p *network.PermanentError
		if _, err := c.Lookup(ctx, "12", ""); !errors.As(err, &p) || p.Code != network.CodeInvalidPhone {
			t.Fatalf("lookup err = %v, want invalid_phone refusal", err)
		}
	})
}

func text(ref, from, to string) network.Message {
	return network.Message{Reference: ref, FromPhone: from, ToPhone: to, Media: network.Media{Type: "text", Content: "hello " + ref}}
}

// A delivery whose answer is lost is retried and returns the first delivery:
// the network holds the message once.
func TestDeliverIdempotentAcrossRetries(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.account(ph(1), ready)
	f.account(ph(2), ready)
	f.lostAnswers()
	f.failFirst(2, status(http.StatusBadGateway))
	c := f.client()

	d, err := c.Deliver(ctx, text("ref-1", ph(1), ph(2)))
	if err != nil {
		t.Fatal(err)
	}
	if f.calls.Load() != 3 {
		t.Fatalf("calls = %d, want 3 (two lost answers, then the repeat)", f.calls.Load())
	}
	again, err := c.Deliver(ctx, text("ref-1", ph(1), ph(2)))
	if err != nil || again != d || d.MessageID == 0 || d.DeliveredAt.IsZero() {
		t.Fatalf("repeat = %+v, %v; first %+v", again, err, d)
	}
	inbox, err := f.net.Inbox(ctx, ph(2))
	if err != nil || len(inbox) != 1 {
		t.Fatalf("inbox = %d messages, %v; want 1", len(inbox), err)
	}
	// The service account (no FromPhone) sends too: the OTP path.
	otp, err := c.Deliver(ctx, network.Message{Reference: "otp:1", ToPhone: ph(2), Media: network.Media{Type: "text", Content: "code"}})
	if err != nil || otp.MessageID == d.MessageID {
		t.Fatalf("otp delivery = %+v, %v", otp, err)
	}
}

func TestDeliverRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.account(ph(1), ready)
	f.account(ph(2), ready)
	f.account(ph(3), builtin.AccountSpec{Verified: true, PhoneVerified: false, ReceivingEnabled: true})
	f.account(ph(4), builtin.AccountSpec{Verified: true, PhoneVerified: true, ReceivingEnabled: false})
	f.account(ph(5), ready)
	if err := f.net.Block(ctx, ph(5), ph(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.net.Deliver(ctx, text("taken", ph(1), ph(2))); err != nil {
		t.Fatal(err)
	}
	c := f.client()
	tests := []struct {
		name string
		msg  network.Message
		code string
	}{
		{"no reference", text("", ph(1), ph(2)), network.CodeInvalidMessage},
		{"bad type", network.Message{Reference: "r1", FromPhone: ph(1), ToPhone: ph(2), Media: network.Media{Type: "fax"}}, network.CodeInvalidMessage},
		{"bad phone", text("r2", ph(1), "0"), network.CodeInvalidPhone},
		{"sender unknown", text("r3", ph(98), ph(2)), network.CodeSenderNotRegistered},
		{"recipient unknown", text("r4", ph(1), ph(99)), network.CodeNotRegistered},
		{"self", text("r5", ph(1), ph(1)), network.CodeSelf},
		{"phone unverified", text("r6", ph(1), ph(3)), network.CodePhoneUnverified},
		{"receiving disabled", text("r7", ph(1), ph(4)), network.CodeReceivingDisabled},
		{"blocked", text("r8", ph(1), ph(5)), network.CodeBlockedSender},
		{"reference reused", text("taken", ph(2), ph(1)), network.CodeReferenceReused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := c.Deliver(ctx, tt.msg)
			var p *network.PermanentError
			if !errors.As(err, &p) || p.Code != tt.code || p.Message == "" {
				t.Fatalf("err = %v, want permanent %s", err, tt.code)
			}
		})
	}
}

// raw sends a request to the peer, signed with key at ts (unsigned when key
// is ""), and returns the status and error code.
func (f *fixture) raw(method, target, key string, body []byte, ts time.Time, mutate func(*http.Request)) (int, string) {
	f.t.Helper()
	req, err := httpnet.NewSignedRequest(context.Background(), method, f.srv.URL+target, key, body, ts)
	if err != nil {
		f.t.Fatal(err)
	}
	if key == "" {
		req.Header.Del(httpnet.HeaderSignature)
		req.Header.Del(httpnet.HeaderTimestamp)
	}
	if mutate != nil {
		mutate(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Code string `json:"code"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Code
}

func TestHandlerSignatures(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.account(ph(1), ready)
	lookup := "/v1/accounts?phone=%2B14155550001"
	now := time.Now()
	msg := []byte(`{"reference":"sig-1","from_phone":"+14155550001","to_phone":"+14155550002","type":"text","content":"x"}`)
	tests := []struct {
		name         string
		method, path string
		key          string
		body         []byte
		ts           time.Time
		mutate       func(*http.Request)
		status       int
		code         string
	}{
		{"good", "GET", lookup, secret, nil, now, nil, 200, ""},
		{"rotation: any v1 matches", "GET", lookup, secret, nil, now, func(r *http.Request) {
			r.Header.Set(httpnet.HeaderSignature, "v1=00ff, "+r.Header.Get(httpnet.HeaderSignature))
		}, 200, ""},
		{"unsigned", "GET", lookup, "", nil, now, nil, 401, httpnet.CodeInvalidSignature},
		{"wrong secret", "GET", lookup, "another-secret", nil, now, nil, 401, httpnet.CodeInvalidSignature},
		{"stale", "GET", lookup, secret, nil, now.Add(-6 * time.Minute), nil, 401, httpnet.CodeInvalidSignature},
		{"from the future", "GET", lookup, secret, nil, now.Add(6 * time.Minute), nil, 401, httpnet.CodeInvalidSignature},
		{"within tolerance", "GET", lookup, secret, nil, now.Add(-4 * time.Minute), nil, 200, ""},
		{"other query than signed", "GET", lookup, secret, nil, now, func(r *http.Request) {
			r.URL.RawQuery = "phone=%2B14155550002"
		}, 401, httpnet.CodeInvalidSignature},
		{"tampered body", "POST", "/v1/messages", secret, msg, now, func(r *http.Request) {
			b := strings.Replace(string(msg), "sig-1", "sig-2", 1)
			r.Body = io.NopCloser(strings.NewReader(b))
		}, 401, httpnet.CodeInvalidSignature},
		{"unknown endpoint", "GET", "/v1/nothing", secret, nil, now, nil, 404, httpnet.CodeNotFound},
		{"wrong method", "DELETE", "/v1/messages", secret, nil, now, nil, 405, httpnet.CodeMethodNotAllowed},
		{"malformed message", "POST", "/v1/messages", secret, []byte(`{"reference":`), now, nil, 400, httpnet.CodeMalformedRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st, code := f.raw(tt.method, tt.path, tt.key, tt.body, tt.ts, tt.mutate)
			if st != tt.status || code != tt.code {
				t.Fatalf("= %d %q, want %d %q", st, code, tt.status, tt.code)
			}
		})
	}
}

// A client with the wrong secret gets a transient *StatusError at once: a
// configuration fault is not a verdict on the message, and not retried.
func TestClientWrongSecret(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.account(ph(1), ready)
	c := f.client(func(c *httpnet.Config) { c.Secret = "not-the-secret" })
	_, err := c.Deliver(context.Background(), text("x", ph(1), ph(1)))
	var se *httpnet.StatusError
	if !errors.As(err, &se) || se.Status != 401 || se.Code != httpnet.CodeInvalidSignature || network.IsPermanent(err) {
		t.Fatalf("err = %v, want a transient 401 StatusError", err)
	}
	if f.calls.Load() != 1 {
		t.Fatalf("calls = %d, want 1", f.calls.Load())
	}
}

func TestRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		failures  int32
		answer    func(w http.ResponseWriter, r *http.Request)
		retries   int
		wantCalls int32
		wantErr   bool
	}{
		{"503 twice then success", 2, status(http.StatusServiceUnavailable), 3, 3, false},
		{"500 then success", 1, status(http.StatusInternalServerError), 3, 2, false},
		{"408 then success", 1, status(http.StatusRequestTimeout), 3, 2, false},
		{"connection dropped then success", 1, func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		}, 3, 2, false},
		{"out of retries", 5, status(http.StatusServiceUnavailable), 1, 2, true},
		{"no retries", 5, status(http.StatusServiceUnavailable), -1, 1, true},
		{"4xx without protocol body is not retried", 5, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no such thing", http.StatusNotFound)
		}, 3, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.account(ph(1), ready)
			f.account(ph(2), ready)
			f.failFirst(tt.failures, tt.answer)
			c := f.client(func(c *httpnet.Config) { c.Retries = tt.retries })
			_, err := c.Deliver(context.Background(), text("retry", ph(1), ph(2)))
			if (err != nil) != tt.wantErr || f.calls.Load() != tt.wantCalls {
				t.Fatalf("err = %v after %d calls; want error %v after %d", err, f.calls.Load(), tt.wantErr, tt.wantCalls)
			}
			if err != nil && network.IsPermanent(err) {
				t.Fatalf("err = %v is permanent, want transient", err)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	tooMany := func(after string) func(w http.ResponseWriter, r *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", after)
			status(http.StatusTooManyRequests)(w, r)
		}
	}
	t.Run("honoured", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.account(ph(1), ready)
		f.failFirst(1, tooMany("1"))
		begin := time.Now()
		if _, err := f.client().Lookup(context.Background(), ph(1), ""); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(begin); took < time.Second || f.calls.Load() != 2 {
			t.Fatalf("took %s over %d calls, want ≥ 1s over 2", took, f.calls.Load())
		}
	})
	t.Run("HTTP date", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.account(ph(1), ready)
		f.failFirst(1, tooMany(time.Now().Add(-time.Second).UTC().Format(http.TimeFormat)))
		if _, err := f.client().Lookup(context.Background(), ph(1), ""); err != nil || f.calls.Load() != 2 {
			t.Fatalf("err = %v after %d calls", err, f.calls.Load())
		}
	})
	t.Run("too long is left to the caller", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.failFirst(1, tooMany("3600"))
		begin := time.Now()
		_, err := f.client().Lookup(context.Background(), ph(1), "")
		var se *httpnet.StatusError
		// Waiting would take an hour: 10 s tells refusing at once from that
		// on a loaded machine.
		if !errors.As(err, &se) || se.Status != 429 || time.Since(begin) > 10*time.Second || f.calls.Load() != 1 {
			t.Fatalf("err = %v after %d calls in %s", err, f.calls.Load(), time.Since(begin))
		}
	})
}

// hang answers nothing until the request is gone. It reads the body first:
// net/http notices a client hanging up (and cancels r.Context) only once the
// request body is consumed. The time bound keeps a client that never hangs up
// from blocking the server's Close: its test fails on timing instead.
func hang(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	select {
	case <-r.Context().Done():
	case <-time.After(hangFor):
	}
}

// hangFor is the longest hang answers nothing: the time bounds of the tests
// that use it stay well under it, and well over what a loaded machine adds.
const hangFor = 30 * time.Second

func TestTimeoutPerAttempt(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.account(ph(1), ready)
	f.failFirst(1, hang)
	c := f.client(func(c *httpnet.Config) { c.Timeout = 100 * time.Millisecond })
	begin := time.Now()
	a, err := c.Lookup(context.Background(), ph(1), "")
	if err != nil || a.Phone != ph(1) || f.calls.Load() != 2 {
		t.Fatalf("lookup = %+v, %v after %d calls; want the retry to succeed", a, err, f.calls.Load())
	}
	if took := time.Since(begin); took < 100*time.Millisecond || took > hangFor/3 {
		t.Fatalf("took %s, want the 100ms timeout then a retry", took)
	}

	f.failFirst(10, hang)
	c = f.client(func(c *httpnet.Config) { c.Timeout = 50 * time.Millisecond; c.Retries = -1 })
	_, err = c.Lookup(context.Background(), ph(1), "")
	if !errors.Is(err, context.DeadlineExceeded) || network.IsPermanent(err) {
		t.Fatalf("err = %v, want a transient deadline error", err)
	}
}

func TestContextCancellation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request)
	}{
		{"during a request", hang},
		{"during the backoff", status(http.StatusServiceUnavailable)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.failFirst(100, tt.answer)
			c := f.client(func(c *httpnet.Config) {
				c.Timeout = time.Minute
				c.BackoffBase, c.BackoffMax = time.Minute, time.Minute
			})
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			begin := time.Now()
			_, err := c.Deliver(ctx, text("cancel", ph(1), ph(2)))
			if !errors.Is(err, context.DeadlineExceeded) || time.Since(begin) > 10*time.Second {
				t.Fatalf("err = %v after %s, want the context's deadline promptly", err, time.Since(begin))
			}
		})
	}
}

// The base URL may carry a path: requests are signed with the full target,
// and a Handler mounted under that prefix verifies them.
func TestBasePathPrefix(t *testing.T) {
	t.Parallel()
	d, _ := dbtest.Migrated(t)
	net := networktest.Builtin(t, builtin.Config{DB: d})
	if _, err := net.AddAccount(context.Background(), builtin.AccountSpec{Phone: ph(1), Verified: true}); err != nil {
		t.Fatal(err)
	}
	h, err := httpnet.NewHandler(httpnet.HandlerConfig{Network: net, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/network/", http.StripPrefix("/network", h))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c, err := httpnet.New(httpnet.Config{BaseURL: srv.URL + "/network/", Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := c.Verified(context.Background(), ph(1)); err != nil || !v {
		t.Fatalf("verified = %v, %v", v, err)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	tests := []httpnet.Config{
		{BaseURL: "http://x"},
		{BaseURL: "", Secret: "s"},
		{BaseURL: "ftp://x", Secret: "s"},
		{BaseURL: "http://x?y=1", Secret: "s"},
		{BaseURL: "/relative", Secret: "s"},
	}
	for _, cfg := range tests {
		if _, err := httpnet.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	if _, err := httpnet.NewHandler(httpnet.HandlerConfig{Secret: "s"}); err == nil {
		t.Error("NewHandler without a network accepted")
	}
}

// The client's requests carry the protocol's headers.
func TestClientHeaders(t *testing.T) {
	t.Parallel()
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		body, _ := io.ReadAll(r.Body)
		if err := httpnet.Verify(r, body, secret, time.Now(), 0); err != nil {
			t.Errorf("verify: %v", err)
		}
		_, _ = io.WriteString(w, `{"message_id":7,"conversation_id":8,"recipient_id":9,"delivered_at":"2026-11-22T14:03:05Z"}`)
	}))
	defer srv.Close()
	c, err := httpnet.New(httpnet.Config{BaseURL: srv.URL, Secret: secret, UserAgent: "ua-test"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Deliver(context.Background(), text("h", ph(1), ph(2)))
	// Accepted, not yet confirmed delivered: that comes as an event.
	if err != nil || d.MessageID != 7 || d.ConversationID != 8 || d.RecipientID != 9 ||
		!d.DeliveredAt.Equal(time.Date(2026, 11, 22, 14, 3, 5, 0, time.UTC)) || d.Delivered {
		t.Fatalf("delivery = %+v, %v", d, err)
	}
	if got.Get("User-Agent") != "ua-test" || got.Get("Content-Type") != "application/json" ||
		!strings.HasPrefix(got.Get(httpnet.HeaderSignature), "v1=") || got.Get(httpnet.HeaderTimestamp) == "" {
		t.Fatalf("headers = %v", got)
	}
}

// An answer over the body limit is an error, not a partial decode.
func TestResponseBodyBounded(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"id":1,"phone":"`+strings.Repeat("9", httpnet.MaxBodyBytes)+`"}`)
	}))
	defer srv.Close()
	c, err := httpnet.New(httpnet.Config{BaseURL: srv.URL, Secret: secret, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lookup(context.Background(), ph(1), ""); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Fatalf("err = %v, want the body limit", err)
	}
}

// The HTTP adapter passes the network conformance test against a fake
// external network that reports receipts and inbound messages as signed
// events (fakenet_test.go).
func TestConformance(t *testing.T) {
	t.Parallel()
	networktest.Run(t, newFakeHarness)
}
