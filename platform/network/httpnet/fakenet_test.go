package httpnet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/network/httpnet"
	"github.com/bizmsg/platform/platform/network/networktest"
)

// fakeNetwork is an external messaging network in memory, as the protocol
// (docs/network-http.md) describes one: it serves GET /v1/accounts, POST
// /v1/messages and POST /v1/templates, and posts signed events to the platform's callback: a
// message.delivered when it delivers a message, a message.read when an
// account reads one, a message.received when an account writes one. Its
// accounts all receive and block nobody.
type fakeNetwork struct {
	t        *testing.T
	callback string

	mu       sync.Mutex
	accounts map[string]int64         // phone → account id
	convs    map[[2]int64]int64       // account pair (low, high) → conversation
	messages []*fakeMessage           // in delivery order
	answers  map[string]deliveryReply // the answer to each reference delivered
	lastID   int64                    // of accounts, conversations, messages, events
}

type fakeMessage struct {
	id, conv   int64
	ref        string
	from, to   string
	read       bool
	occurredAt time.Time
}

// deliveryReply is POST /v1/messages's answer.
type deliveryReply struct {
	MessageID      int64     `json:"message_id"`
	ConversationID int64     `json:"conversation_id"`
	RecipientID    int64     `json:"recipient_id"`
	DeliveredAt    time.Time `json:"delivered_at"`
}

func (f *fakeNetwork) next() int64 {
	f.lastID++
	return f.lastID
}

// conversation returns the conversation of two accounts, creating it.
// f.mu is held.
func (f *fakeNetwork) conversation(a, b string) int64 {
	pair := [2]int64{min(f.accounts[a], f.accounts[b]), max(f.accounts[a], f.accounts[b])}
	c, ok := f.convs[pair]
	if !ok {
		c = f.next()
		f.convs[pair] = c
	}
	return c
}

func (f *fakeNetwork) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = httpnet.Verify(r, body, secret, time.Now(), 0)
	}
	if err != nil {
		f.t.Errorf("fake network: %s %s: %v", r.Method, r.URL, err)
		fakeAnswer(w, http.StatusUnauthorized, map[string]string{"code": httpnet.CodeInvalidSignature})
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == httpnet.PathAccounts:
		f.mu.Lock()
		p := r.URL.Query().Get("phone")
		id, ok := f.accounts[p]
		f.mu.Unlock()
		if !ok {
			fakeAnswer(w, http.StatusNotFound, map[string]string{"code": network.CodeNotRegistered, "message": "no account"})
			return
		}
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		fakeAnswer(w, http.StatusOK, map[string]any{"id": id, "phone": p, "verified": true, "verified_at": at,
			"phone_verified": true, "phone_verified_at": at, "receiving_enabled": true, "blocks_sender": false})
	case r.Method == http.MethodPost && r.URL.Path == httpnet.PathMessages:
		var m struct {
			Reference string `json:"reference"`
			FromPhone string `json:"from_phone"`
			ToPhone   string `json:"to_phone"`
		}
		if err := json.Unmarshal(body, &m); err != nil {
			fakeAnswer(w, http.StatusBadRequest, map[string]string{"code": httpnet.CodeMalformedRequest})
			return
		}
		reply, delivered, ok := f.deliver(m.Reference, m.FromPhone, m.ToPhone)
		if !ok {
			fakeAnswer(w, http.StatusUnprocessableEntity, map[string]string{"code": network.CodeNotRegistered, "message": "no account"})
			return
		}
		if delivered {
			f.post(httpnet.EventMessageDelivered, map[string]any{"reference": m.Reference, "delivered_at": reply.DeliveredAt})
		}
		fakeAnswer(w, http.StatusOK, reply)
	case r.Method == http.MethodPost && r.URL.Path == httpnet.PathTemplates:
		var tpl struct {
			Reference string `json:"reference"`
			Body      string `json:"body"`
		}
		if err := json.Unmarshal(body, &tpl); err != nil || tpl.Reference == "" {
			fakeAnswer(w, http.StatusBadRequest, map[string]string{"code": httpnet.CodeMalformedRequest})
			return
		}
		fakeAnswer(w, http.StatusAccepted, map[string]string{"reference": tpl.Reference, "status": "pending"})
		// The fake reviews by the built-in network's rules, after it
		// answered, as an external network's reviewers would.
		verdict := map[string]any{"reference": tpl.Reference, "status": network.TemplateApproved}
		if reason := builtin.ReviewTemplate(tpl.Body); reason != "" {
			verdict["status"], verdict["reason"] = network.TemplateRejected, reason
		}
		f.post(httpnet.EventTemplateReviewed, verdict)
	default:
		fakeAnswer(w, http.StatusNotFound, map[string]string{"code": httpnet.CodeNotFound})
	}
}

// deliver stores a message delivered by the platform, once per reference,
// and returns the answer, whether it is new, and false when an account is
// missing.
func (f *fakeNetwork) deliver(ref, from, to string) (deliveryReply, bool, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a, ok := f.answers[ref]; ok {
		return a, false, true
	}
	if _, ok := f.accounts[from]; !ok {
		return deliveryReply{}, false, false
	}
	if _, ok := f.accounts[to]; !ok {
		return deliveryReply{}, false, false
	}
	m := &fakeMessage{id: f.next(), conv: f.conversation(from, to), ref: ref, from: from, to: to,
		occurredAt: time.Now().UTC()}
	f.messages = append(f.messages, m)
	a := deliveryReply{MessageID: m.id, ConversationID: m.conv, RecipientID: f.accounts[to], DeliveredAt: m.occurredAt}
	f.answers[ref] = a
	return a, true, true
}

// post posts one signed event to the platform's callback. It runs on the
// fake's handlers' goroutines too, so it reports failures with Errorf.
func (f *fakeNetwork) post(typ string, data map[string]any) {
	f.mu.Lock()
	id := "evt_" + strconv.FormatInt(f.next(), 10)
	f.mu.Unlock()
	rawData, err := json.Marshal(data)
	var body []byte
	if err == nil {
		now := time.Now().UTC()
		body, err = json.Marshal(httpnet.Event{ID: id, Type: typ, OccurredAt: &now, Data: rawData})
	}
	var req *http.Request
	if err == nil {
		req, err = httpnet.NewSignedRequest(context.Background(), http.MethodPost, f.callback, secret, body, time.Now())
	}
	var resp *http.Response
	if err == nil {
		resp, err = http.DefaultClient.Do(req)
	}
	if err != nil {
		f.t.Errorf("post %s: %v", typ, err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		f.t.Errorf("post %s: %d %s", typ, resp.StatusCode, b)
	}
}

func fakeAnswer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// callback is the platform's side of the events: it verifies, decodes and
// records each event, as the platform's callback endpoint does.
type callback struct {
	t   *testing.T
	rec networktest.Recorder
}

func (c *callback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = httpnet.Verify(r, body, secret, time.Now(), 0)
	}
	var ev httpnet.Event
	if err == nil {
		err = json.Unmarshal(body, &ev)
	}
	var d httpnet.Decoded
	if err == nil {
		d, err = httpnet.Decode(ev)
	}
	if err == nil {
		now := time.Now()
		if rc, ok := d.Receipt(now); ok {
			err = c.rec.Receipt(r.Context(), rc)
		} else if m, ok := d.Inbound(now); ok {
			err = c.rec.Inbound(r.Context(), m)
		} else if v, ok := d.Verdict(now); ok {
			err = c.rec.TemplateReviewed(r.Context(), v)
		} else {
			err = fmt.Errorf("event %s is neither a receipt nor an inbound message", ev.Type)
		}
	}
	if err != nil {
		c.t.Errorf("callback: %s: %v", body, err)
		fakeAnswer(w, http.StatusUnprocessableEntity, map[string]string{"code": "refused"})
		return
	}
	fakeAnswer(w, http.StatusOK, map[string]string{"id": d.ID, "type": d.Type, "status": "applied"})
}

// fakeHarness is the conformance harness of the HTTP adapter: the Client,
// talking to a fakeNetwork that posts its events to a callback.
type fakeHarness struct {
	net    *fakeNetwork
	cb     *callback
	client *httpnet.Client
}

func newFakeHarness(t *testing.T) networktest.Harness {
	t.Helper()
	cb := &callback{t: t}
	cbSrv := httptest.NewServer(cb)
	t.Cleanup(cbSrv.Close)
	f := &fakeNetwork{t: t, callback: cbSrv.URL + "/api/v1/network/events", accounts: map[string]int64{},
		convs: map[[2]int64]int64{}, answers: map[string]deliveryReply{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := httpnet.New(httpnet.Config{BaseURL: srv.URL, Secret: secret, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return &fakeHarness{net: f, cb: cb, client: c}
}

func (h *fakeHarness) Network() network.Network { return h.client }

func (h *fakeHarness) AddAccount(_ *testing.T, p string) {
	h.net.mu.Lock()
	defer h.net.mu.Unlock()
	if _, ok := h.net.accounts[p]; !ok {
		h.net.accounts[p] = h.net.next()
	}
}

// Read marks read the recipient's unread messages (from sender) and posts a
// message.read for each message the platform delivered.
func (h *fakeHarness) Read(t *testing.T, recipient, sender string) {
	t.Helper()
	f := h.net
	f.mu.Lock()
	var read []*fakeMessage
	for _, m := range f.messages {
		if m.to == recipient && (sender == "" || m.from == sender) && !m.read {
			m.read = true
			read = append(read, m)
		}
	}
	f.mu.Unlock()
	for _, m := range read {
		if m.ref != "" {
			f.post(httpnet.EventMessageRead, map[string]any{"reference": m.ref, "read_at": time.Now().UTC()})
		}
	}
}

// Write stores a message from one account to another and posts a
// message.received for it.
func (h *fakeHarness) Write(t *testing.T, from, to, text string) {
	t.Helper()
	f := h.net
	f.mu.Lock()
	_, okFrom := f.accounts[from]
	_, okTo := f.accounts[to]
	if !okFrom || !okTo {
		f.mu.Unlock()
		t.Fatalf("Write(%s, %s): no such account", from, to)
	}
	m := &fakeMessage{id: f.next(), conv: f.conversation(from, to), from: from, to: to, occurredAt: time.Now().UTC()}
	f.messages = append(f.messages, m)
	f.mu.Unlock()
	f.post(httpnet.EventMessageReceived, map[string]any{"id": strconv.FormatInt(m.id, 10), "from_phone": from,
		"to_phone": to, "conversation_id": m.conv, "type": "text", "content": text, "sent_at": m.occurredAt})
}

// Verdicts returns the template verdicts the callback recorded.
func (h *fakeHarness) Verdicts(*testing.T) []network.TemplateVerdict { return h.cb.rec.Verdicts() }

// Collect returns what the callback recorded: the fake posts each event
// before the call that caused it returns.
func (h *fakeHarness) Collect(*testing.T) ([]network.Receipt, []network.Inbound) {
	return h.cb.rec.Got()
}
