package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bizmsg/platform/client"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// hook is one webhook request a receiver took: its headers and body, and
// its payload decoded.
type hook struct {
	header http.Header
	body   []byte
	Type   string `json:"type"`
	Data   struct {
		ID             int64   `json:"id"`
		Status         string  `json:"status"`
		Direction      string  `json:"direction"`
		ConversationID *int64  `json:"conversation_id"`
		Content        string  `json:"content"`
		SentAt         *string `json:"sent_at"`
		DeliveredAt    *string `json:"delivered_at"`
		ReadAt         *string `json:"read_at"`
	} `json:"data"`
}

// receiver is an organization's webhook server: it records every request
// and answers 204.
type receiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []hook
	bad  []string
	wait chan struct{}
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{wait: make(chan struct{}, 1000)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		h := hook{header: req.Header.Clone(), body: body}
		if err == nil {
			err = json.Unmarshal(body, &h)
		}
		r.mu.Lock()
		if err != nil {
			r.bad = append(r.bad, err.Error())
		}
		r.got = append(r.got, h)
		r.mu.Unlock()
		r.wait <- struct{}{}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// hooks returns what the receiver took so far.
func (r *receiver) hooks() []hook {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// until waits for the receiver to hold n requests.
func (r *receiver) until(t *testing.T, n int, what string) []hook {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if got := r.hooks(); len(got) >= n {
			return got
		}
		select {
		case <-r.wait:
		case <-deadline:
			t.Fatalf("waiting for %s: the receiver holds %d requests, want %d", what, len(r.hooks()), n)
		}
	}
}

func types(hs []hook) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Type
	}
	return out
}

// docs/api.md, §Message lifecycle and §Webhooks, end to end on the built-in
// network: a message goes from its send to read, and the organization's
// server hears message.sent, message.delivered and message.read, in that
// order, each signed so that the Standard Webhooks reference library
// verifies it; the recipient's reply arrives as message.received and in
// the history on the same conversation.
func TestLifecycleWebhooksEndToEnd(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true, Env: map[string]string{"WEBHOOK_ALLOW_PRIVATE": "true"}})
	org := e.Register(t)
	sender, recipient := phoneN(1), phoneN(2)
	sid := e.activeSender(org, sender)
	e.recipient(recipient)

	// The endpoint is added with the typed client.
	rcv := newReceiver(t)
	c := e.Client(t, client.WithAPIKey(org.APIKey))
	events := []client.WebhookEventType{client.MessageSent, client.MessageDelivered, client.MessageRead,
		client.MessageFailed, client.MessageReceived}
	created, err := c.TenantCreateWebhookWithResponse(t.Context(), client.CreateWebhookRequest{
		Url: rcv.srv.URL + "/hooks", Events: &events,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Check(created.StatusCode(), created.Body); err != nil {
		t.Fatalf("create webhook: %v", err)
	}
	wh, err := standardwebhooks.NewWebhook(created.JSON201.Data.Secret)
	if err != nil {
		t.Fatal(err)
	}
	verify := func(hs []hook) {
		t.Helper()
		for _, h := range hs {
			if err := wh.Verify(h.body, h.header); err != nil {
				t.Fatalf("%s does not verify with the reference library: %v", h.Type, err)
			}
		}
	}

	msg := accepted(t, e.send(org, text(sid, recipient, "hello")))
	got := rcv.until(t, 2, "message.sent and message.delivered")
	if want := []string{"message.sent", "message.delivered"}; !slices.Equal(types(got), want) {
		t.Fatalf("events %v, want %v", types(got), want)
	}
	if got[0].Data.Status != "sent" || got[1].Data.Status != "delivered" || got[1].Data.DeliveredAt == nil {
		t.Fatalf("payloads: %s / %s", got[0].body, got[1].body)
	}

	// The recipient reads it (platform network read).
	if _, err := e.net.Read(context.Background(), recipient, sender); err != nil {
		t.Fatal(err)
	}
	got = rcv.until(t, 3, "message.read")
	if want := []string{"message.sent", "message.delivered", "message.read"}; !slices.Equal(types(got), want) {
		t.Fatalf("events %v, want %v", types(got), want)
	}
	ids := map[string]bool{}
	for _, h := range got {
		if h.Data.ID != msg.ID {
			t.Fatalf("%s is about message %d, want %d", h.Type, h.Data.ID, msg.ID)
		}
		ids[h.header.Get("webhook-id")] = true
	}
	if len(ids) != 3 {
		t.Fatalf("webhook-id not one per event: %v", ids)
	}
	if got[2].Data.Status != "read" || got[2].Data.ReadAt == nil {
		t.Fatalf("message.read payload %s", got[2].body)
	}
	verify(got)
	if m := e.getMessage(org, msg.ID); m.Status != "read" {
		t.Fatalf("message status %s after the read, want read", m.Status)
	}

	// The recipient answers (platform network send): an inbound message on
	// the same conversation.
	if _, err := e.net.Send(context.Background(), recipient, sender, "hi back"); err != nil {
		t.Fatal(err)
	}
	got = rcv.until(t, 4, "message.received")
	in := got[3]
	verify(got[3:])
	conv := e.getMessage(org, msg.ID).ConversationID
	if in.Type != "message.received" || in.Data.Direction != "inbound" || in.Data.Status != "received" ||
		in.Data.Content != "hi back" || in.Data.ConversationID == nil || conv == nil || *in.Data.ConversationID != *conv {
		t.Fatalf("message.received payload %s (conversation of the outbound: %v)", in.body, conv)
	}
	r := e.Do(Request{Method: http.MethodGet, Header: org.Key(),
		Path: fmt.Sprintf("/api/v1/messages?direction=inbound&conversation_id=%d", *conv)})
	var list struct {
		Data []struct {
			ID        int64  `json:"id"`
			Direction string `json:"direction"`
			Content   string `json:"content"`
		} `json:"data"`
	}
	r.JSON(t, &list)
	if r.Status != http.StatusOK || len(list.Data) != 1 || list.Data[0].ID != in.Data.ID || list.Data[0].Content != "hi back" {
		t.Fatalf("inbound history = %d %s", r.Status, r.Body)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.bad) > 0 {
		t.Fatalf("undecodable bodies: %v", rcv.bad)
	}
}
