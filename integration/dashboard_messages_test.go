package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/network"
)

// The dashboard's history shows each message's direction and status
// (read and received among them) and links a message to its conversation,
// which shows as a thread: the contact's messages on the left, the
// organization's on the right, oldest first. Another organization's
// conversation, or one with no message, is 404.
func TestDashboardMessageThread(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org, other := e.Register(t), e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	e.activeSender(other, phoneN(2))
	contact := phoneN(10)
	e.recipient(contact)
	ctx := context.Background()

	out := accepted(t, e.send(org, text(sid, contact, "Your order has shipped.")))
	e.deliverNow(org, out.ID)
	sent := e.getMessage(org, out.ID)
	if sent.Status != "delivered" || sent.ConversationID == nil {
		t.Fatalf("delivered message %+v", sent)
	}
	conv := *sent.ConversationID
	ref := org.Tenant.Schema + ":" + fmt.Sprint(out.ID)
	if _, err := e.App.Messages.ApplyReceipt(ctx, messages.Receipt{Reference: ref, Status: messages.StatusRead}); err != nil {
		t.Fatal(err)
	}
	if got, err := e.App.Messages.Receive(ctx, messages.Inbound{ID: "web-in-1", FromPhone: contact, ToPhone: phoneN(1),
		ConversationID: conv, Media: network.Media{Type: "text", Content: "Thank you <3"}}); err != nil || got != messages.ReceiptApplied {
		t.Fatalf("receive: %s %v", got, err)
	}

	// html/template writes a phone's + as &#43;.
	html := func(p string) string { return strings.ReplaceAll(p, "+", "&#43;") }
	w := newWebClient(t, e.Env)
	wantPage(t, w.login(org.OwnerEmail, org.OwnerPassword), http.StatusSeeOther)
	thread := fmt.Sprintf("/conversations/%d", conv)
	for _, tc := range []struct {
		name, path string
		status     int
		want       []string
	}{
		{"history", "/messages", http.StatusOK, []string{`data-direction="inbound"`, `data-direction="outbound"`,
			`data-status="read"`, `data-status="received"`, `href="` + thread + `"`, "↙ in", "↗ out", `<option>received</option>`}},
		{"history of inbound messages", "/messages?direction=inbound", http.StatusOK, []string{`data-direction="inbound"`, "Thank you &lt;3"}},
		{"history of one conversation", "/messages?conversation_id=" + fmt.Sprint(conv), http.StatusOK, []string{"Your order has shipped."}},
		{"a bad direction", "/messages?direction=up", http.StatusUnprocessableEntity, []string{"must be one of outbound, inbound"}},
		{"the thread", thread, http.StatusOK, []string{`class="bubble in"`, `class="bubble out"`, "Thank you &lt;3",
			"Your order has shipped.", html(contact), html(phoneN(1)), fmt.Sprintf(`href="/messages/%d"`, out.ID)}},
		{"the outbound message links its conversation", fmt.Sprintf("/messages/%d", out.ID), http.StatusOK,
			[]string{`id="message-conversation"`, "Outbound", "Read", "Delivered"}},
		{"an unknown conversation", "/conversations/999999", http.StatusNotFound, nil},
		{"not an id", "/conversations/abc", http.StatusNotFound, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantPage(t, w.get(tc.path), tc.status, tc.want...)
		})
	}
	// Oldest first: the organization's message, then the answer.
	body := w.get(thread).Body
	if strings.Index(body, "Your order has shipped.") > strings.Index(body, "Thank you &lt;3") {
		t.Fatal("the thread is not oldest first")
	}
	// The inbound message's own page has no delivery section.
	inbound := e.Do(Request{Method: http.MethodGet, Path: messagesPath + "?direction=inbound", Header: org.Key()})
	var list struct {
		Data []message `json:"data"`
	}
	inbound.JSON(t, &list)
	if len(list.Data) != 1 {
		t.Fatalf("inbound messages %s", inbound.Body)
	}
	page := w.get(fmt.Sprintf("/messages/%d", list.Data[0].ID))
	wantPage(t, page, http.StatusOK, "Inbound", html(contact))
	if strings.Contains(page.Body, `id="delivery"`) {
		t.Fatal("an inbound message's page shows a delivery")
	}

	// Another organization sees nothing of it.
	o := newWebClient(t, e.Env)
	wantPage(t, o.login(other.OwnerEmail, other.OwnerPassword), http.StatusSeeOther)
	wantPage(t, o.get(thread), http.StatusNotFound)
}
