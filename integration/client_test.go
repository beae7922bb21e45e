package integration

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/bizmsg/platform/client"
)

// checkingDoer sends the typed client's requests to the test server and
// holds every answer to docs/openapi.yaml, as Env.Do does.
type checkingDoer struct {
	t   testing.TB
	srv *http.Client
}

// Do sends req and checks its response's conformance.
func (d checkingDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.srv.Do(req)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	if err := checkConformance(req, &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}); err != nil {
		d.t.Errorf("%v", err)
	}
	return resp, nil
}

// Client returns the typed Go client (package client) of the test's
// server, for t, with opts (client.WithAPIKey, client.WithBearerToken).
func (e *Env) Client(t testing.TB, opts ...client.ClientOption) *client.ClientWithResponses {
	t.Helper()
	opts = append([]client.ClientOption{client.WithHTTPClient(checkingDoer{t: t, srv: e.Server.Client()})}, opts...)
	c, err := client.NewClientWithResponses(e.Server.URL, opts...)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return c
}

// The typed client against the service: a key from the fixtures looks
// recipients up, sends, reads a message back as it is delivered and lists
// the history with filters and paging.
func TestClientSendLookupAndHistory(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true})
	org := e.Register(t)
	senderID := e.activeSender(org, phoneN(101))
	e.recipient(phoneN(201))
	e.recipient(phoneN(202))
	c := e.Client(t, client.WithAPIKey(org.APIKey))
	ctx := t.Context()

	lookups := []struct {
		phone      string
		canReceive bool
		reason     client.ReasonCode
	}{
		{phoneN(201), true, "ok"},
		{phoneN(299), false, "not_registered"},
		{phoneN(101), false, "self"},
	}
	for _, l := range lookups {
		rsp, err := c.TenantLookupWithResponse(ctx, &client.TenantLookupParams{Phone: l.phone, SenderNumberId: &senderID})
		if err != nil {
			t.Fatal(err)
		}
		if err := client.Check(rsp.StatusCode(), rsp.Body); err != nil {
			t.Fatalf("lookup %s: %v", l.phone, err)
		}
		if got := rsp.JSON200; got.CanReceive != l.canReceive || got.ReasonCode != l.reason {
			t.Fatalf("lookup %s = can_receive %v, %s; want %v, %s", l.phone, got.CanReceive, got.ReasonCode, l.canReceive, l.reason)
		}
	}

	var ids []int64
	for i, to := range []string{phoneN(201), phoneN(202), phoneN(202)} {
		ref := fmt.Sprintf("order-%d", i)
		rsp, err := c.TenantSendMessageWithResponse(ctx, nil, client.SendMessageRequest{
			SenderNumberId: &senderID, ToPhone: to, Type: client.Text, Content: new("Your order has shipped."), ClientReference: &ref,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := client.Check(rsp.StatusCode(), rsp.Body); err != nil {
			t.Fatalf("send to %s: %v", to, err)
		}
		if m := rsp.JSON202.Data; m.Status != client.MessageStatusQueued || m.ToPhone != to || m.SenderNumberId != senderID {
			t.Fatalf("accepted message %+v", m)
		}
		ids = append(ids, rsp.JSON202.Data.Id)
	}

	// Each message reads back, and ends delivered (the built-in network
	// stores it in the recipient's conversation), with the network's ids.
	for _, id := range ids {
		var m client.Message
		until(20*time.Second, func() bool {
			rsp, err := c.TenantGetMessageWithResponse(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if err := client.Check(rsp.StatusCode(), rsp.Body); err != nil {
				t.Fatalf("get message %d: %v", id, err)
			}
			m = rsp.JSON200.Data
			return m.Status != client.MessageStatusQueued
		})
		if m.Id != id || m.Status != client.MessageStatusDelivered || m.SentAt == nil || m.DeliveredAt == nil || m.MessageId == nil {
			t.Fatalf("message %d = %s (sent_at %v, delivered_at %v, message_id %v), want delivered", id, m.Status, m.SentAt, m.DeliveredAt, m.MessageId)
		}
	}

	to, delivered, ref := phoneN(202), client.MessageStatusDelivered, "order-0"
	one := 1
	filters := []struct {
		name   string
		params client.TenantListMessagesParams
		want   []int64
	}{
		{"all, newest first", client.TenantListMessagesParams{}, []int64{ids[2], ids[1], ids[0]}},
		{"to_phone", client.TenantListMessagesParams{ToPhone: &to}, []int64{ids[2], ids[1]}},
		{"status", client.TenantListMessagesParams{Status: &delivered, SenderNumberId: &senderID}, []int64{ids[2], ids[1], ids[0]}},
		{"client_reference", client.TenantListMessagesParams{ClientReference: &ref}, []int64{ids[0]}},
	}
	for _, f := range filters {
		rsp, err := c.TenantListMessagesWithResponse(ctx, &f.params)
		if err != nil {
			t.Fatal(err)
		}
		if err := client.Check(rsp.StatusCode(), rsp.Body); err != nil {
			t.Fatalf("list %s: %v", f.name, err)
		}
		var got []int64
		for _, m := range rsp.JSON200.Data {
			got = append(got, m.Id)
		}
		if fmt.Sprint(got) != fmt.Sprint(f.want) || rsp.JSON200.NextCursor != nil {
			t.Fatalf("list %s = %v (next %v), want %v", f.name, got, rsp.JSON200.NextCursor, f.want)
		}
	}
	// Paging: one a page, following next_cursor to the end.
	var paged []int64
	params := client.TenantListMessagesParams{Limit: &one}
	for range 4 {
		rsp, err := c.TenantListMessagesWithResponse(ctx, &params)
		if err != nil {
			t.Fatal(err)
		}
		if err := client.Check(rsp.StatusCode(), rsp.Body); err != nil {
			t.Fatalf("page: %v", err)
		}
		for _, m := range rsp.JSON200.Data {
			paged = append(paged, m.Id)
		}
		if rsp.JSON200.NextCursor == nil {
			break
		}
		params.Cursor = rsp.JSON200.NextCursor
	}
	if fmt.Sprint(paged) != fmt.Sprint([]int64{ids[2], ids[1], ids[0]}) {
		t.Fatalf("paged %v, want all three newest first", paged)
	}
}

// The service's errors decode into the client's error type: each answer
// is an *client.Error with its code, the members that explain it, and the
// same value in the response's typed field for its status.
func TestClientErrors(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org := e.Register(t)
	senderID := e.activeSender(org, phoneN(101))
	readOnly := e.APIKey(t, org, "messages.read")
	unknown := int64(999999)

	tests := []struct {
		name   string
		key    string
		call   func(t *testing.T, c *client.ClientWithResponses) (status int, body []byte, typed *client.Error)
		status int
		code   string
		check  func(t *testing.T, e *client.Error)
	}{
		{
			name: "validation", key: org.APIKey, status: http.StatusUnprocessableEntity, code: "validation_failed",
			call: func(t *testing.T, c *client.ClientWithResponses) (int, []byte, *client.Error) {
				rsp, err := c.TenantSendMessageWithResponse(t.Context(), nil, client.SendMessageRequest{
					SenderNumberId: &senderID, ToPhone: "4155550201", Type: client.Text, Content: new(""),
				})
				if err != nil {
					t.Fatal(err)
				}
				return rsp.StatusCode(), rsp.Body, rsp.JSON422
			},
			check: func(t *testing.T, e *client.Error) {
				if e.Errors == nil || len((*e.Errors)["to_phone"]) == 0 || len((*e.Errors)["content"]) == 0 {
					t.Fatalf("field errors %v, want to_phone and content", e.Errors)
				}
			},
		},
		{
			name: "unknown message", key: org.APIKey, status: http.StatusNotFound, code: "not_found",
			call: func(t *testing.T, c *client.ClientWithResponses) (int, []byte, *client.Error) {
				rsp, err := c.TenantGetMessageWithResponse(t.Context(), unknown)
				if err != nil {
					t.Fatal(err)
				}
				return rsp.StatusCode(), rsp.Body, rsp.JSON404
			},
		},
		{
			name: "wrong key", key: "bmk_" + "000000000000000000000000000000" + "000000", status: http.StatusUnauthorized, code: "invalid_api_key",
			call: func(t *testing.T, c *client.ClientWithResponses) (int, []byte, *client.Error) {
				rsp, err := c.TenantLookupWithResponse(t.Context(), &client.TenantLookupParams{Phone: phoneN(201)})
				if err != nil {
					t.Fatal(err)
				}
				return rsp.StatusCode(), rsp.Body, rsp.JSON401
			},
		},
		{
			name: "scope", key: readOnly, status: http.StatusForbidden, code: "insufficient_scope",
			call: func(t *testing.T, c *client.ClientWithResponses) (int, []byte, *client.Error) {
				rsp, err := c.TenantSendMessageWithResponse(t.Context(), nil, client.SendMessageRequest{
					SenderNumberId: &senderID, ToPhone: phoneN(201), Type: client.Text, Content: new("hi"),
				})
				if err != nil {
					t.Fatal(err)
				}
				return rsp.StatusCode(), rsp.Body, rsp.JSON403
			},
			check: func(t *testing.T, e *client.Error) {
				if e.RequiredScopes == nil || len(*e.RequiredScopes) == 0 {
					t.Fatalf("required_scopes %v", e.RequiredScopes)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, body, typed := tt.call(t, e.Client(t, client.WithAPIKey(tt.key)))
			err := client.Check(status, body)
			var apiErr *client.Error
			if status != tt.status || !errors.As(err, &apiErr) || apiErr.Code != tt.code || apiErr.RequestId == "" || apiErr.Message == "" {
				t.Fatalf("status %d, error %#v; want %d with code %s", status, err, tt.status, tt.code)
			}
			if typed == nil || typed.Code != tt.code {
				t.Fatalf("the response's typed field for %d = %#v", status, typed)
			}
			if tt.check != nil {
				tt.check(t, apiErr)
			}
		})
	}
}
