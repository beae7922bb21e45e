package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/consent"
)

// The opt-out API: add (201, then 200 with the same entry), list with
// filters and paging, delete (204, then 404), the reply texts, scopes,
// the audit log and the contact.* webhooks.
func TestOptOutAPI(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true, Env: map[string]string{"WEBHOOK_ALLOW_PRIVATE": "true"}})
	org := e.Register(t)
	sender := phoneN(1)
	sid := e.activeSender(org, sender)
	rcv := newReceiver(t)
	r := e.Do(Request{Method: http.MethodPost, Path: "/api/v1/webhooks", Header: org.Key(), Body: map[string]any{
		"url": rcv.srv.URL + "/hooks", "events": []string{"contact.opted_out", "contact.opted_in"}}})
	if r.Status != http.StatusCreated {
		t.Fatalf("create webhook = %d %s", r.Status, r.Body)
	}

	add := func(body map[string]any, header map[string]string) *Response {
		return e.Do(Request{Method: http.MethodPost, Path: optOutsPath, Header: header, Body: body})
	}
	var created struct {
		Data optOut `json:"data"`
	}
	r = add(map[string]any{"phone": "+1 (415) 555-0003", "note": " asked by phone "}, org.Key())
	r.JSON(t, &created)
	if r.Status != http.StatusCreated || created.Data.Phone != phoneN(3) || created.Data.Source != consent.SourceAPI ||
		created.Data.Note == nil || *created.Data.Note != "asked by phone" || created.Data.Keyword != nil {
		t.Fatalf("add = %d %s", r.Status, r.Body)
	}
	var again struct {
		Data optOut `json:"data"`
	}
	r = add(map[string]any{"phone": phoneN(3), "note": "other"}, org.Key())
	r.JSON(t, &again)
	if r.Status != http.StatusOK || again.Data.Phone != created.Data.Phone || again.Data.CreatedAt != created.Data.CreatedAt ||
		again.Data.Note == nil || *again.Data.Note != "asked by phone" {
		t.Fatalf("add again = %d %s, want 200 with the first entry", r.Status, r.Body)
	}
	m := wantError(t, add(map[string]any{"phone": "12", "note": "a\x01b"}, org.Key()), http.StatusUnprocessableEntity, "validation_failed")
	if errs, _ := m["errors"].(map[string]any); len(errs) != 2 {
		t.Fatalf("bad add errors = %v, want phone and note", m)
	}
	narrow := e.APIKey(t, org, "messages.send")
	wantError(t, add(map[string]any{"phone": phoneN(4)}, KeyHeader(narrow)), http.StatusForbidden, "insufficient_scope")
	manage := e.APIKey(t, org, "contacts.manage")
	for i := 4; i < 9; i++ {
		if r := add(map[string]any{"phone": phoneN(i)}, KeyHeader(manage)); r.Status != http.StatusCreated {
			t.Fatalf("add %d = %d %s", i, r.Status, r.Body)
		}
	}

	// Paging, newest first, and the filters.
	var seen []string
	q := url.Values{"limit": {"4"}}
	for {
		list, next := e.optOuts(org, q)
		for _, o := range list {
			seen = append(seen, o.Phone)
		}
		if next == nil {
			break
		}
		q.Set("cursor", *next)
	}
	want := []string{phoneN(8), phoneN(7), phoneN(6), phoneN(5), phoneN(4), phoneN(3)}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("pages = %v, want %v", seen, want)
	}
	if list, _ := e.optOuts(org, url.Values{"phone": {"+1 415 555 0005"}}); len(list) != 1 || list[0].Phone != phoneN(5) {
		t.Fatalf("phone filter = %+v", list)
	}
	if list, _ := e.optOuts(org, url.Values{"source": {"keyword"}}); len(list) != 0 {
		t.Fatalf("source filter = %+v", list)
	}
	r = e.Do(Request{Method: http.MethodGet, Path: optOutsPath + "?source=sms&phone=x&limit=0", Header: org.Key()})
	if m := wantError(t, r, http.StatusUnprocessableEntity, "validation_failed"); len(m["errors"].(map[string]any)) != 3 {
		t.Fatalf("bad list query = %s", r.Body)
	}

	// A send and the lookup see the list; delete opts back in.
	e.recipient(phoneN(3))
	wantError(t, e.send(org, text(sid, phoneN(3), "hi")), http.StatusUnprocessableEntity, consent.CodeRecipientOptedOut)
	del := func(p string) *Response {
		return e.Do(Request{Method: http.MethodDelete, Path: optOutsPath + "/" + url.PathEscape(p), Header: org.Key()})
	}
	if r := del(phoneN(3)); r.Status != http.StatusNoContent {
		t.Fatalf("delete = %d %s", r.Status, r.Body)
	}
	wantError(t, del(phoneN(3)), http.StatusNotFound, "not_found")
	wantError(t, del("not-a-phone"), http.StatusUnprocessableEntity, "validation_failed")
	accepted(t, e.send(org, text(sid, phoneN(3), "hi again")))
	// The path's phone with its + URL-encoded, as the contract writes it.
	r = e.Do(Request{Method: http.MethodDelete, Path: optOutsPath + "/" + strings.Replace(phoneN(4), "+", "%2B", 1), Header: org.Key()})
	if r.Status != http.StatusNoContent {
		t.Fatalf("delete %%2B-encoded = %d %s", r.Status, r.Body)
	}
	if list, _ := e.optOuts(org, url.Values{"phone": {phoneN(4)}}); len(list) != 0 {
		t.Fatalf("%s still opted out after its delete: %+v", phoneN(4), list)
	}

	// The audit log names both changes.
	r = e.Do(Request{Method: http.MethodGet, Path: "/api/v1/central/audit-log?action=opt_out", Header: org.Bearer()})
	var audit struct {
		Data []struct {
			Action string `json:"action"`
		} `json:"data"`
	}
	r.JSON(t, &audit)
	actions := map[string]int{}
	for _, a := range audit.Data {
		actions[a.Action]++
	}
	if actions["opt_out.add"] != 6 || actions["opt_out.remove"] != 2 {
		t.Fatalf("audit = %d %s", r.Status, r.Body)
	}

	// Webhooks: six opted_out, two opted_in, with the entry as data.
	hs := rcv.until(t, 8, "contact events")
	var in struct {
		Data optOut `json:"data"`
	}
	for _, h := range hs {
		if h.Type == "contact.opted_in" {
			var one struct {
				Data optOut `json:"data"`
			}
			if err := json.Unmarshal(h.body, &one); err != nil {
				t.Fatal(err)
			}
			if one.Data.Phone == phoneN(3) {
				in = one
			}
		}
	}
	if in.Data.Phone != phoneN(3) || in.Data.Source != consent.SourceAPI {
		t.Fatalf("contact.opted_in = %+v", in.Data)
	}

	// Reply texts: set, used by the next keyword, "" answers nothing.
	put := func(body map[string]any) *Response {
		return e.Do(Request{Method: http.MethodPut, Path: optOutsPath + "/settings", Header: org.Key(), Body: body})
	}
	r = put(map[string]any{"opt_out_reply": "  Bye from Acme. "})
	var set struct {
		Data struct {
			OptOut string `json:"opt_out_reply"`
			OptIn  string `json:"opt_in_reply"`
		} `json:"data"`
	}
	r.JSON(t, &set)
	if r.Status != http.StatusOK || set.Data.OptOut != "Bye from Acme." || set.Data.OptIn != consent.DefaultOptInReply {
		t.Fatalf("put settings = %d %s", r.Status, r.Body)
	}
	wantError(t, put(map[string]any{"opt_in_reply": string(make([]byte, 400))}), http.StatusUnprocessableEntity, "validation_failed")
	p := phoneN(20)
	e.recipient(p)
	e.writeTo(org, p, sender, "stop")
	if got := e.waitInbox(p, sender, 1); got[0] != "Bye from Acme." {
		t.Fatalf("confirmation = %q", got)
	}
	if r := put(map[string]any{"opt_in_reply": ""}); r.Status != http.StatusOK {
		t.Fatalf("put empty = %d %s", r.Status, r.Body)
	}
	e.writeTo(org, p, sender, "START")
	e.waitIdle(t)
	if got := e.inboxFrom(p, sender); len(got) != 1 {
		t.Fatalf("an empty opt-in text still answered: %q", got)
	}
	accepted(t, e.send(org, text(sid, p, "back in")))
}

// An opt-out committed while sends are under way: no send is accepted
// after it. The test holds the sender's daily counter, so that a batch of
// sends is inside its acceptance statement (past the opt-out check) when
// the opt-out is asked for; the opt-out must then wait for those sends,
// and every send after it must be refused. Counting the recipient's
// messages as soon as the opt-out answers, and again once every send
// answered, the two counts must be equal.
func TestOptOutCommittedDuringSends(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	p := phoneN(2)
	e.recipient(p)
	accepted(t, e.send(org, text(sid, p, "the day's counter row")))
	ctx := context.Background()
	count := func() int {
		var n int
		if err := e.App.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM `+org.Tenant.Table("messages")+
			` WHERE to_phone = $1`, p).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waiting := func(what string) int {
		var n int
		if err := e.App.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
			WHERE NOT l.granted AND a.datname = current_database() AND l.locktype = $1`, what).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	hold, err := e.App.DB.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hold.Rollback(ctx) }()
	if _, err := hold.Exec(ctx, `SELECT 1 FROM `+org.Tenant.Table("daily_usage")+
		` WHERE sender_number_id = $1 AND side = 'accept' FOR UPDATE`, sid); err != nil {
		t.Fatal(err)
	}
	const sends = 50
	answers := make(chan *Response, sends)
	var wg sync.WaitGroup
	for i := range sends {
		wg.Go(func() {
			r, err := e.Send(Request{Method: http.MethodPost, Path: messagesPath, Header: org.Key(),
				Body: text(sid, p, fmt.Sprintf("send %d", i))})
			if err != nil {
				t.Error(err)
				return
			}
			answers <- r
		})
	}
	poll(t, 20*time.Second, func() (bool, string) {
		return waiting("transactionid")+waiting("tuple") > 0, "no send waits for the held counter"
	})
	optedOut := make(chan *Response, 1)
	go func() {
		r, err := e.Send(Request{Method: http.MethodPost, Path: optOutsPath, Header: org.Key(), Body: map[string]any{"phone": p}})
		if err != nil {
			t.Error(err)
		}
		optedOut <- r
	}()
	var early *Response
	poll(t, 20*time.Second, func() (bool, string) {
		select {
		case early = <-optedOut:
			return true, ""
		default:
			return waiting("advisory") > 0, "the opt-out neither answered nor waits"
		}
	})
	if early != nil {
		// Nothing made the opt-out wait for the sends inside their
		// statement: they would be accepted after it.
		t.Logf("the opt-out answered %d while sends were past their check", early.Status)
	}
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	r := early
	if r == nil {
		r = <-optedOut
	}
	if r == nil || r.Status != http.StatusCreated {
		t.Fatalf("opt-out = %v", r)
	}
	atOptOut := count()
	wg.Wait()
	close(answers)
	took, refused := 0, 0
	for r := range answers {
		switch r.Status {
		case http.StatusAccepted:
			took++
		case http.StatusUnprocessableEntity:
			wantError(t, r, http.StatusUnprocessableEntity, consent.CodeRecipientOptedOut)
			refused++
		default:
			t.Fatalf("send = %d %s", r.Status, r.Body)
		}
	}
	if after := count(); after != atOptOut {
		t.Fatalf("%d sends were accepted after the opt-out committed (%d at its answer, %d now; %d accepted, %d refused)",
			after-atOptOut, atOptOut, after, took, refused)
	}
	if took+refused != sends || took == 0 {
		t.Fatalf("%d accepted, %d refused of %d", took, refused, sends)
	}
	t.Logf("%d sends accepted before the opt-out, %d refused after it", took, refused)
}

// The service window (NETWORK_SERVICE_WINDOW): a free-form message only
// within the window after the recipient last wrote to that sender; the
// lookup with a sender says when it closes. Without a window (the
// default, every other test) nothing of this applies.
func TestServiceWindow(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true, Env: map[string]string{"NETWORK_SERVICE_WINDOW": "24h"}})
	org := e.Register(t)
	s1, s2, p := phoneN(1), phoneN(2), phoneN(3)
	id1, id2 := e.activeSender(org, s1), e.activeSender(org, s2)
	e.recipient(p)
	window := func(id int64) *string {
		r := e.lookup(org, url.Values{"phone": {p}, "sender_number_id": {fmt.Sprint(id)}})
		var res struct {
			ExpiresAt *string `json:"service_window_expires_at"`
		}
		r.JSON(t, &res)
		return res.ExpiresAt
	}
	wantError(t, e.send(org, text(id1, p, "cold")), http.StatusUnprocessableEntity, "outside_service_window")
	if w := window(id1); w != nil {
		t.Fatalf("window before any inbound = %s", *w)
	}
	wrote := e.Clock.Now()
	e.writeTo(org, p, s1, "hello?")
	accepted(t, e.send(org, text(id1, p, "hi, how can we help")))
	if w := window(id1); w == nil || *w != wrote.Add(24*time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339) {
		t.Fatalf("window after the inbound = %v, want %s", w, wrote.Add(24*time.Hour))
	}
	// The window is per sender number.
	wantError(t, e.send(org, text(id2, p, "from the other number")), http.StatusUnprocessableEntity, "outside_service_window")
	if w := window(id2); w != nil {
		t.Fatalf("window of the other number = %s", *w)
	}
	// It closes 24 h after the inbound; the batch path decides alike.
	e.Clock.Advance(24*time.Hour + time.Second)
	if w := window(id1); w != nil {
		t.Fatalf("window after 24 h = %s", *w)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			r, err := e.Send(Request{Method: http.MethodPost, Path: messagesPath, Header: org.Key(), Body: text(id1, p, "late")})
			if err != nil {
				t.Error(err)
				return
			}
			if r.Status != http.StatusUnprocessableEntity {
				t.Errorf("late send = %d %s", r.Status, r.Body)
			}
		})
	}
	wg.Wait()
}
