package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/app"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/network/httpnet"
)

// The service with NETWORK=http, end to end: the external network is an
// httptest server speaking the protocol (httpnet.Handler) over the built-in
// network of the test's database, so every lookup, OTP and delivery crosses
// HTTP, and the network's signed events come back to the callback.

// httpNetEnv is a running service whose network is reached over HTTP.
type httpNetEnv struct {
	*msgEnv
	secret string
	// calls counts the network's signed requests by "METHOD path", and
	// bodies keeps their bodies.
	mu     sync.Mutex
	calls  map[string]int
	bodies map[string][][]byte
}

func startHTTPNetwork(t *testing.T) *httpNetEnv {
	t.Helper()
	e := &httpNetEnv{secret: strings.Repeat("n", 32), calls: map[string]int{}, bodies: map[string][][]byte{}}
	// The handler needs the test's database, which Start creates: the
	// server answers 503 (transient, retried by the client) until it is set.
	var handler atomic.Pointer[httpnet.Handler]
	// Mounted under a path, as a real network's base URL may be: the
	// signature covers the path the client sent, not the stripped one.
	srv := httptest.NewServer(http.StripPrefix("/network", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := handler.Load()
		if h == nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"code":"unavailable","message":"starting"}`)
			return
		}
		if r.Header.Get(httpnet.HeaderSignature) != "" {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			e.mu.Lock()
			e.calls[r.Method+" "+r.URL.Path]++
			e.bodies[r.Method+" "+r.URL.Path] = append(e.bodies[r.Method+" "+r.URL.Path], body)
			e.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})))
	t.Cleanup(srv.Close) // after the service has stopped (cleanups run last first)
	e.msgEnv = startMsg(t, Options{Workers: true, Env: map[string]string{
		"NETWORK":         "http",
		"NETWORK_URL":     srv.URL + "/network",
		"NETWORK_SECRET":  e.secret,
		"NETWORK_TIMEOUT": "10s",
		// Only the events activate senders here, not the sweep.
		"SENDER_SWEEP_INTERVAL": "1h",
	}})
	if _, ok := e.App.Network.(*httpnet.Client); !ok {
		t.Fatalf("the service's network is %T, want *httpnet.Client", e.App.Network)
	}
	h, err := httpnet.NewHandler(httpnet.HandlerConfig{Network: e.net, Secret: e.secret,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	handler.Store(h)
	return e
}

// networkCalls returns how many signed requests the network got for op.
func (e *httpNetEnv) networkCalls(op string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls[op]
}

// networkBodies returns the bodies of the network's signed requests for op.
func (e *httpNetEnv) networkBodies(op string) [][]byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.bodies[op])
}

// allCalls returns the counts of every operation.
func (e *httpNetEnv) allCalls() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.calls)
}

// event is a network event body.
func event(id, typ string, data map[string]any) []byte {
	b, err := json.Marshal(map[string]any{"id": id, "type": typ, "occurred_at": time.Now().UTC().Format(time.RFC3339), "data": data})
	if err != nil {
		panic(err)
	}
	return b
}

// signed returns the signature headers of an event body signed with secret
// at ts.
func signed(secret string, ts time.Time, body []byte) map[string]string {
	sig := httpnet.Signature(secret, ts.Unix(), http.MethodPost, app.NetworkEventsPath, body)
	return map[string]string{
		httpnet.HeaderTimestamp: strconv.FormatInt(ts.Unix(), 10),
		httpnet.HeaderSignature: "v1=" + sig,
	}
}

// post posts an event body with headers.
func (e *httpNetEnv) post(body []byte, headers map[string]string) *Response {
	e.t.Helper()
	return e.Do(Request{Method: http.MethodPost, Path: app.NetworkEventsPath, Body: body, Header: headers})
}

// apply posts an event signed now and checks a 200 with status.
func (e *httpNetEnv) apply(body []byte, status string) {
	e.t.Helper()
	r := e.post(body, signed(e.secret, time.Now(), body))
	if r.Status != http.StatusOK {
		e.t.Fatalf("event %s = %d %s", body, r.Status, r.Body)
	}
	var got struct{ ID, Type, Status string }
	r.JSON(e.t, &got)
	var sent struct{ ID, Type string }
	if err := json.Unmarshal(body, &sent); err != nil {
		e.t.Fatal(err)
	}
	if got.ID != sent.ID || got.Type != sent.Type || got.Status != status {
		e.t.Fatalf("event %s answered %s, want status %s", body, r.Body, status)
	}
}

func TestNetworkHTTP(t *testing.T) {
	t.Parallel()
	e := startHTTPNetwork(t)
	org := e.Register(t)
	recipient := phoneN(2)
	e.recipient(recipient)

	// Registration, OTP and verification ask the network over HTTP.
	sid := e.activeSender(org, phoneN(1))
	if e.networkCalls("GET /v1/accounts") == 0 || e.networkCalls("POST /v1/messages") == 0 {
		t.Fatalf("the OTP did not cross HTTP: %v", e.allCalls())
	}

	// A message sent over the Tenant API is delivered through HTTP.
	posts := e.networkCalls("POST /v1/messages")
	m := accepted(t, e.send(org, text(sid, recipient, "over http")))
	sent := e.waitStatus(org, m.ID, "sent", 30*time.Second)
	if sent.MessageID == nil || sent.ConversationID == nil || sent.SentAt == nil {
		t.Fatalf("sent message without the network's ids: %+v", sent)
	}
	if n := e.networkMessages(org); n != 1 {
		t.Fatalf("the network holds %d messages of the organization, want 1", n)
	}
	if e.networkCalls("POST /v1/messages") <= posts {
		t.Fatal("the delivery did not cross HTTP")
	}
	ref := org.Tenant.Schema + ":" + strconv.FormatInt(m.ID, 10)

	// Events that are not signed right are refused before anything else.
	delivered := event("evt_delivered_1", httpnet.EventMessageDelivered, map[string]any{"reference": ref})
	now := time.Now()
	for _, tc := range []struct {
		name    string
		body    []byte
		headers map[string]string
	}{
		{"unsigned", delivered, nil},
		{"wrong secret", delivered, signed(strings.Repeat("x", 32), now, delivered)},
		{"stale", delivered, signed(e.secret, now.Add(-10*time.Minute), delivered)},
		{"from the future", delivered, signed(e.secret, now.Add(10*time.Minute), delivered)},
		{"another body", delivered, signed(e.secret, now, event("evt_other", httpnet.EventMessageFailed, map[string]any{"reference": ref}))},
		{"no timestamp", delivered, map[string]string{httpnet.HeaderSignature: signed(e.secret, now, delivered)[httpnet.HeaderSignature]}},
		{"signature without version", delivered, map[string]string{httpnet.HeaderTimestamp: strconv.FormatInt(now.Unix(), 10),
			httpnet.HeaderSignature: strings.TrimPrefix(signed(e.secret, now, delivered)[httpnet.HeaderSignature], "v1=")}},
		{"unsigned and not JSON", []byte("hello"), map[string]string{"Content-Type": "text/plain"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, e.post(tc.body, tc.headers), http.StatusUnauthorized, httpnet.CodeInvalidSignature)
		})
	}
	if got := e.getMessage(org, m.ID); got.Status != "sent" {
		t.Fatalf("a refused event moved the message to %s", got.Status)
	}

	// The signed receipt delivers the message; a redelivery changes
	// nothing; a failure after the delivery fails it (docs/api.md, §Message
	// lifecycle), and a delivered receipt after that changes nothing; a
	// reference not ours is ignored.
	e.apply(delivered, "applied")
	r := e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("%s/%d", messagesPath, m.ID), Header: org.Key()})
	data := r.Map(t)["data"].(map[string]any)
	if data["status"] != "delivered" || data["delivered_at"] == nil || data["error_code"] != nil {
		t.Fatalf("after the receipt: %s", r.Body)
	}
	e.apply(delivered, "unchanged")
	e.apply(event("evt_failed_1", httpnet.EventMessageFailed, map[string]any{"reference": ref, "error_code": "x"}), "applied")
	e.apply(event("evt_delivered_2", httpnet.EventMessageDelivered, map[string]any{"reference": ref}), "unchanged")
	e.apply(event("evt_unknown", httpnet.EventMessageDelivered, map[string]any{"reference": org.Tenant.Schema + ":999999"}), "ignored")
	e.apply(event("evt_otp", httpnet.EventMessageDelivered, map[string]any{"reference": "otp:" + org.Tenant.Schema + ":1:1"}), "ignored")
	if got := e.getMessage(org, m.ID); got.Status != "failed" || got.ErrorCode == nil || *got.ErrorCode != "x" {
		t.Fatalf("after the repeats: %+v", got)
	}

	// A signed event the platform cannot read.
	for _, tc := range []struct {
		name        string
		body        []byte
		contentType string
		status      int
		code        string
		fields      []string // of a validation_failed
	}{
		{"not JSON", []byte(`{"id":`), "", http.StatusBadRequest, "malformed_json", nil},
		{"not a JSON media type", event("evt_t", httpnet.EventMessageDelivered, map[string]any{"reference": ref}), "text/plain",
			http.StatusUnsupportedMediaType, "unsupported_media_type", nil},
		{"unknown type", event("evt_u", "message.exploded", map[string]any{"reference": ref}), "", http.StatusUnprocessableEntity, httpnet.CodeUnknownEventType, nil},
		{"no reference", event("evt_r", httpnet.EventMessageDelivered, map[string]any{}), "", http.StatusUnprocessableEntity, "validation_failed",
			[]string{"data.reference"}},
		{"data not an object", []byte(`{"id":"evt_d","type":"message.delivered","data":"x"}`), "", http.StatusUnprocessableEntity, "validation_failed",
			[]string{"data"}},
		{"data field of the wrong type", []byte(`{"id":"evt_w","type":"message.delivered","data":{"reference":5}}`), "",
			http.StatusUnprocessableEntity, "validation_failed", []string{"data.reference"}},
		{"id of the wrong type", []byte(`{"id":5,"type":"message.delivered","data":{"reference":"x"}}`), "",
			http.StatusUnprocessableEntity, "validation_failed", []string{"id"}},
		{"time not RFC 3339", event("evt_b", httpnet.EventMessageDelivered, map[string]any{"reference": ref, "delivered_at": "yesterday"}), "",
			http.StatusBadRequest, "malformed_json", nil},
		{"over 1 MiB", event("evt_l", httpnet.EventMessageDelivered, map[string]any{"reference": ref, "pad": strings.Repeat("x", 1<<20)}), "",
			http.StatusRequestEntityTooLarge, "payload_too_large", nil},
		{"invalid phone", event("evt_p", httpnet.EventAccountVerified, map[string]any{"phone": "12"}), "", http.StatusUnprocessableEntity, "validation_failed",
			[]string{"data.phone"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := signed(e.secret, time.Now(), tc.body)
			if tc.contentType != "" {
				h["Content-Type"] = tc.contentType
			}
			r := e.post(tc.body, h)
			if tc.fields != nil {
				wantFields(t, r, tc.fields...)
				return
			}
			wantError(t, r, tc.status, tc.code)
		})
	}

	// account.verified activates a number waiting for its owner, trusting the
	// event (the sweep is an hour away, and the network's account still reads
	// unverified).
	owner := phoneN(3)
	e.account(builtin.AccountSpec{Phone: owner, PhoneVerified: true, ReceivingEnabled: true})
	pid := e.registerSender(org, owner)
	if st := e.confirmSender(org, pid, owner); st != "pending_account_verification" {
		t.Fatalf("sender %s is %s, want pending_account_verification", owner, st)
	}
	wantError(t, e.send(org, text(pid, recipient, "too early")), http.StatusUnprocessableEntity, "sender_owner_unverified")
	verified := event("evt_verified_1", httpnet.EventAccountVerified, map[string]any{"phone": owner})
	e.apply(verified, "applied")
	r = e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("/api/v1/central/sender-numbers/%d", pid), Header: org.Bearer()})
	if st := r.Map(t)["data"].(map[string]any)["status"]; r.Status != http.StatusOK || st != "active" {
		t.Fatalf("after account.verified: %d %s", r.Status, r.Body)
	}
	e.apply(verified, "unchanged")
	m2 := accepted(t, e.send(org, text(pid, recipient, "now verified")))
	e.waitStatus(org, m2.ID, "sent", 30*time.Second)
}
