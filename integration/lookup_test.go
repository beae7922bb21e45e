package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/bizmsg/platform/platform/network/builtin"
)

// Contact lookup: docs/api.md, §Lookup.

func (e *msgEnv) lookup(org *Org, q url.Values) *Response {
	e.t.Helper()
	return e.Do(Request{Method: http.MethodGet, Path: lookupPath + "?" + q.Encode(), Header: org.Key()})
}

type lookupResult struct {
	Exists          bool    `json:"exists"`
	CanReceive      bool    `json:"can_receive"`
	ReasonCode      string  `json:"reason_code"`
	RecipientID     *int64  `json:"recipient_id"`
	IsVerified      bool    `json:"is_verified"`
	PhoneVerifiedAt *string `json:"phone_verified_at"`
}

// Every reason_code, with and without a sender; can_receive only with ok.
func TestLookupReasons(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org := e.Register(t)
	from := phoneN(1)
	sid := e.activeSender(org, from)

	okID := e.recipient(phoneN(2))
	unverifiedOwner := e.account(builtin.AccountSpec{Phone: phoneN(3), Verified: false, PhoneVerified: true, ReceivingEnabled: true})
	phoneUnverified := e.account(builtin.AccountSpec{Phone: phoneN(4), Verified: true, PhoneVerified: false, ReceivingEnabled: true})
	notReceiving := e.account(builtin.AccountSpec{Phone: phoneN(5), Verified: true, PhoneVerified: true, ReceivingEnabled: false})
	blocker := e.recipient(phoneN(6))
	if err := e.net.Block(context.Background(), phoneN(6), from); err != nil {
		t.Fatal(err)
	}
	senderAccount, err := e.net.Lookup(context.Background(), from, "")
	if err != nil {
		t.Fatal(err)
	}

	byID := func(p string) url.Values { return url.Values{"phone": {p}, "sender_number_id": {fmt.Sprint(sid)}} }
	byPhone := func(p string) url.Values { return url.Values{"phone": {p}, "sender_phone": {from}} }
	alone := func(p string) url.Values { return url.Values{"phone": {p}} }
	tests := []struct {
		name       string
		q          url.Values
		exists     bool
		reason     string
		id         int64
		verified   bool
		phoneVerAt bool
	}{
		{"ok", alone(phoneN(2)), true, "ok", okID, true, true},
		{"ok with sender", byID(phoneN(2)), true, "ok", okID, true, true},
		{"ok, owner not verified", alone(phoneN(3)), true, "ok", unverifiedOwner, false, true},
		{"not registered", alone(phoneN(7)), false, "not_registered", 0, false, false},
		{"not registered with sender", byPhone(phoneN(7)), false, "not_registered", 0, false, false},
		{"phone unverified", alone(phoneN(4)), true, "phone_unverified", phoneUnverified, true, false},
		{"receiving disabled", byID(phoneN(5)), true, "receiving_disabled", notReceiving, true, true},
		{"blocked sender by id", byID(phoneN(6)), true, "blocked_sender", blocker, true, true},
		{"blocked sender by phone", byPhone(phoneN(6)), true, "blocked_sender", blocker, true, true},
		{"blocks another sender only: ok without one", alone(phoneN(6)), true, "ok", blocker, true, true},
		{"self", byID(from), true, "self", senderAccount.ID, true, true},
		{"self by phone, formatted", url.Values{"phone": {"+1 (415) 555-0001"}, "sender_phone": {from}}, true, "self", senderAccount.ID, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.lookup(org, tt.q)
			if r.Status != http.StatusOK {
				t.Fatalf("lookup = %d %s", r.Status, r.Body)
			}
			raw := r.Map(t)
			if len(raw) != 8 || raw["service_window_expires_at"] != nil {
				t.Fatalf("lookup body %s: want exactly the eight fields, unwrapped, and no window (none configured)", r.Body)
			}
			if named := tt.q.Has("sender_number_id") || tt.q.Has("sender_phone"); named && raw["sender_status"] != "active" ||
				!named && raw["sender_status"] != nil {
				t.Fatalf("sender_status in %s: want active with the sender named, null without", r.Body)
			}
			var got lookupResult
			r.JSON(t, &got)
			if got.Exists != tt.exists || got.ReasonCode != tt.reason || got.CanReceive != (tt.reason == "ok") ||
				got.IsVerified != tt.verified || (got.PhoneVerifiedAt != nil) != tt.phoneVerAt {
				t.Fatalf("lookup = %s", r.Body)
			}
			if tt.id == 0 && got.RecipientID != nil || tt.id != 0 && (got.RecipientID == nil || *got.RecipientID != tt.id) {
				t.Fatalf("recipient_id in %s, want %d", r.Body, tt.id)
			}
		})
	}
}

// A lookup naming a sender number that may not send yet says so: the
// recipient is reachable (ok), and sender_status shows why a send from that
// number is refused (422 sender_not_active).
func TestLookupShowsSenderStatus(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org := e.Register(t)
	pending := e.registerSender(org, phoneN(1))
	e.recipient(phoneN(2))
	r := e.lookup(org, url.Values{"phone": {phoneN(2)}, "sender_number_id": {fmt.Sprint(pending)}})
	if raw := r.Map(t); r.Status != http.StatusOK || raw["reason_code"] != "ok" || raw["sender_status"] != "pending_verification" {
		t.Fatalf("lookup with a sender pending verification = %d %s, want ok with sender_status pending_verification", r.Status, r.Body)
	}
	wantError(t, e.send(org, text(pending, phoneN(2), "x")), http.StatusUnprocessableEntity, "sender_not_active")
}

// Malformed input is 422 (every field at once), an unknown sender 404, a
// key without contacts.lookup 403.
func TestLookupErrors(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	other := e.Register(t)
	e.activeSender(other, phoneN(8))
	e.recipient(phoneN(2))

	invalid := []struct {
		name   string
		q      url.Values
		fields []string
	}{
		{"no phone", url.Values{}, []string{"phone"}},
		{"malformed phone", url.Values{"phone": {"12345"}}, []string{"phone"}},
		{"letters", url.Values{"phone": {"+1415555ABCD"}}, []string{"phone"}},
		{"bad sender id and phone", url.Values{"phone": {"+1"}, "sender_number_id": {"x"}, "sender_phone": {"0"}},
			[]string{"phone", "sender_number_id", "sender_phone"}},
		{"id and phone of different numbers", url.Values{"phone": {phoneN(2)}, "sender_number_id": {fmt.Sprint(sid)},
			"sender_phone": {phoneN(2)}}, []string{"sender_phone"}},
	}
	for _, tt := range invalid {
		t.Run(tt.name, func(t *testing.T) { wantFields(t, e.lookup(org, tt.q), tt.fields...) })
	}
	for _, q := range []url.Values{
		{"phone": {phoneN(2)}, "sender_number_id": {"999999"}},
		{"phone": {phoneN(2)}, "sender_phone": {phoneN(9)}},
		{"phone": {phoneN(2)}, "sender_phone": {phoneN(8)}}, // another organization's number
	} {
		wantError(t, e.lookup(org, q), http.StatusNotFound, "not_found")
	}
	noScope := KeyHeader(e.APIKey(t, org, "messages.send", "messages.read", "usage.read"))
	wantError(t, e.Do(Request{Method: http.MethodGet, Path: lookupPath + "?phone=" + url.QueryEscape(phoneN(2)), Header: noScope}),
		http.StatusForbidden, "insufficient_scope")
	only := KeyHeader(e.APIKey(t, org, "contacts.lookup"))
	if r := e.Do(Request{Method: http.MethodGet, Path: lookupPath + "?phone=" + url.QueryEscape(phoneN(2)), Header: only}); r.Status != http.StatusOK {
		t.Fatalf("lookup with contacts.lookup = %d %s", r.Status, r.Body)
	}
	// A '+' left unencoded arrives as a space and is read as the '+' it was,
	// for the sender's phone and the history's to_phone filter too.
	encoded := e.Do(Request{Method: http.MethodGet, Path: lookupPath + "?phone=" + url.QueryEscape(phoneN(2)), Header: org.Key()})
	raw := e.Do(Request{Method: http.MethodGet, Path: lookupPath + "?phone=" + phoneN(2) + "&sender_phone=" + phoneN(1), Header: org.Key()})
	if raw.Status != http.StatusOK || encoded.Status != http.StatusOK || raw.Map(t)["recipient_id"] != encoded.Map(t)["recipient_id"] {
		t.Fatalf("unencoded + : %d %s, encoded: %d %s", raw.Status, raw.Body, encoded.Status, encoded.Body)
	}
	if r := e.Do(Request{Method: http.MethodGet, Path: messagesPath + "?to_phone=" + phoneN(2), Header: org.Key()}); r.Status != http.StatusOK {
		t.Fatalf("history with an unencoded + = %d %s", r.Status, r.Body)
	}
}

// The lookup and the send apply one rule: a phone the lookup calls
// unreachable is refused at send time with the same reason_code, and one it
// calls ok is accepted.
func TestLookupPredictsSend(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org := e.Register(t)
	from := phoneN(1)
	sid := e.activeSender(org, from)
	e.recipient(phoneN(2))
	e.account(builtin.AccountSpec{Phone: phoneN(3), Verified: true, PhoneVerified: true, ReceivingEnabled: false})
	e.recipient(phoneN(4))
	if err := e.net.Block(context.Background(), phoneN(4), from); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{phoneN(2), phoneN(3), phoneN(4), phoneN(5), from} {
		var res lookupResult
		e.lookup(org, url.Values{"phone": {p}, "sender_number_id": {fmt.Sprint(sid)}}).JSON(t, &res)
		r := e.send(org, text(sid, p, "hi"))
		if res.CanReceive {
			accepted(t, r)
			continue
		}
		m := wantError(t, r, http.StatusUnprocessableEntity, "recipient_unreachable")
		if m["reason_code"] != res.ReasonCode {
			t.Fatalf("%s: send reason %v, lookup reason %s", p, m["reason_code"], res.ReasonCode)
		}
	}
}
