package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/consent"
)

// Opt-outs: docs/api.md, §Opt-outs.

const optOutsPath = "/api/v1/opt-outs"

// optOut is the opt-out entry resource.
type optOut struct {
	Phone          string  `json:"phone"`
	Source         string  `json:"source"`
	Keyword        *string `json:"keyword"`
	SenderNumberID *int64  `json:"sender_number_id"`
	Note           *string `json:"note"`
	CreatedAt      string  `json:"created_at"`
}

// optOuts lists org's opt-outs with the query q.
func (e *msgEnv) optOuts(org *Org, q url.Values) ([]optOut, *string) {
	e.t.Helper()
	r := e.Do(Request{Method: http.MethodGet, Path: optOutsPath + "?" + q.Encode(), Header: org.Key()})
	if r.Status != http.StatusOK {
		e.t.Fatalf("list opt-outs = %d %s", r.Status, r.Body)
	}
	var body struct {
		Data       []optOut `json:"data"`
		NextCursor *string  `json:"next_cursor"`
	}
	r.JSON(e.t, &body)
	return body.Data, body.NextCursor
}

// writeTo has the network account from write text to the organization's
// number to, and waits until the platform stored it.
func (e *msgEnv) writeTo(org *Org, from, to, text string) {
	e.t.Helper()
	if _, err := e.net.Send(context.Background(), from, to, text); err != nil {
		e.t.Fatal(err)
	}
	poll(e.t, 20*time.Second, func() (bool, string) {
		var n int
		if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM `+org.Tenant.Table("messages")+
			` WHERE direction = 'inbound' AND from_phone = $1 AND content = $2`, from, text).Scan(&n); err != nil {
			e.t.Fatal(err)
		}
		return n > 0, fmt.Sprintf("inbound %q from %s to %s not stored", text, from, to)
	})
}

// inboxFrom is what the account p received from the phone from.
func (e *msgEnv) inboxFrom(p, from string) []string {
	e.t.Helper()
	inbox, err := e.net.Inbox(context.Background(), p)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, m := range inbox {
		if m.FromPhone == from {
			out = append(out, m.Content)
		}
	}
	return out
}

// waitInbox waits until p received n messages from from, and returns them.
func (e *msgEnv) waitInbox(p, from string, n int) []string {
	e.t.Helper()
	var got []string
	poll(e.t, 20*time.Second, func() (bool, string) {
		got = e.inboxFrom(p, from)
		return len(got) >= n, fmt.Sprintf("inbox of %s has %d messages from %s, want %d: %q", p, len(got), from, n, got)
	})
	return got
}

// STOP in several spellings opts the writer out of the whole
// organization, START opts them back in, HELP is only a message; each
// keyword is answered once from the number it came to, past a used-up
// daily limit and the opt-out itself.
func TestOptOutKeywords(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true})
	org := e.Register(t)
	s1, s2 := phoneN(1), phoneN(2)
	id1 := e.activeSender(org, s1)
	id2 := e.activeSender(org, s2)
	spellings := []string{"STOP", " stop ", "Unsubscribe", "cancel\n", "End", "quit", "OPTOUT", "revoke", "StopAll"}
	for i := range spellings {
		e.recipient(phoneN(10 + i))
	}
	helper := phoneN(30)
	e.recipient(helper)
	one := 1
	e.setLimit(org, id1, &one)
	accepted(t, e.send(org, text(id1, helper, "uses the day's only place")))

	for i, word := range spellings {
		e.writeTo(org, phoneN(10+i), s1, word)
	}
	e.writeTo(org, helper, s1, "HELP")
	e.writeTo(org, helper, s1, "please stop")

	list, _ := e.optOuts(org, url.Values{"limit": {"100"}})
	if len(list) != len(spellings) {
		t.Fatalf("opt-outs = %+v, want one per keyword (%d)", list, len(spellings))
	}
	for _, o := range list {
		if o.Source != consent.SourceKeyword || o.Keyword == nil || o.SenderNumberID == nil || *o.SenderNumberID != id1 {
			t.Fatalf("keyword entry = %+v, want source keyword from sender %d", o, id1)
		}
		if want := strings.ToUpper(strings.TrimSpace(spellings[phoneIndex(t, o.Phone)-10])); *o.Keyword != want {
			t.Fatalf("entry of %s has keyword %q, want %q", o.Phone, *o.Keyword, want)
		}
	}
	for i := range spellings {
		p := phoneN(10 + i)
		got := e.waitInbox(p, s1, 1)
		if len(got) != 1 || got[0] != consent.DefaultOptOutReply {
			t.Fatalf("%s got %q from %s, want the one confirmation", p, got, s1)
		}
		// Organization-wide: the other number may not write either.
		wantError(t, e.send(org, text(id2, p, "hello")), http.StatusUnprocessableEntity, consent.CodeRecipientOptedOut)
		r := e.lookup(org, url.Values{"phone": {p}})
		var lr lookupResult
		r.JSON(t, &lr)
		if lr.ReasonCode != consent.ReasonOptedOut || lr.CanReceive {
			t.Fatalf("lookup of opted-out %s = %s", p, r.Body)
		}
	}
	if got := e.waitInbox(helper, s1, 1); len(got) != 1 {
		t.Fatalf("HELP and a sentence were answered: %q", got)
	}
	accepted(t, e.send(org, text(id2, helper, "HELP changes nothing")))

	// START: back in, confirmed; a second STOP is answered again.
	p := phoneN(10)
	e.writeTo(org, p, s2, " start")
	got := e.waitInbox(p, s2, 1)
	if got[0] != consent.DefaultOptInReply {
		t.Fatalf("opt-in confirmation = %q", got)
	}
	accepted(t, e.send(org, text(id2, p, "welcome back")))
	e.writeTo(org, p, s2, "STOP")
	if got := e.waitInbox(p, s2, 3); got[2] != consent.DefaultOptOutReply {
		t.Fatalf("second opt-out confirmation = %q", got)
	}
	wantError(t, e.send(org, text(id2, p, "hello")), http.StatusUnprocessableEntity, consent.CodeRecipientOptedOut)
	// Once each, however long the jobs had to run.
	e.waitIdle(t)
	for i := range spellings {
		if n := len(e.inboxFrom(phoneN(10+i), s1)); n != 1 {
			t.Fatalf("%s got %d confirmations, want 1", phoneN(10+i), n)
		}
	}
}

// phoneIndex is n of phoneN(n).
func phoneIndex(t *testing.T, p string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscanf(strings.TrimPrefix(p, "+1415555"), "%d", &n); err != nil {
		t.Fatalf("phone %q: %v", p, err)
	}
	return n
}

// waitIdle waits until River has no delivery or confirmation job left to
// run, and no tenant's job outbox holds one still to move.
func (e *msgEnv) waitIdle(t *testing.T) {
	t.Helper()
	poll(t, 20*time.Second, func() (bool, string) {
		tenants, err := e.App.Migrator.Tenants(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, tn := range tenants {
			var queued int
			if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM `+tn.Table("job_outbox")).Scan(&queued); err != nil {
				t.Fatal(err)
			}
			if queued > 0 {
				return false, fmt.Sprintf("%d jobs still in the job outbox of %s", queued, tn.Schema)
			}
		}
		var n int
		if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM river.river_job
			WHERE state IN ('available', 'running', 'retryable', 'scheduled')
			  AND kind IN ('consent_reply', 'message_delivery')`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0, fmt.Sprintf("%d jobs still to run", n)
	})
}

// One organization's opt-outs never touch another's.
func TestOptOutIsolation(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true})
	a, b := e.Register(t), e.Register(t)
	sa, sb, p := phoneN(1), phoneN(2), phoneN(3)
	ida, idb := e.activeSender(a, sa), e.activeSender(b, sb)
	e.recipient(p)
	e.writeTo(a, p, sa, "STOP")
	wantError(t, e.send(a, text(ida, p, "hi")), http.StatusUnprocessableEntity, consent.CodeRecipientOptedOut)
	accepted(t, e.send(b, text(idb, p, "hi from b")))
	if list, _ := e.optOuts(b, nil); len(list) != 0 {
		t.Fatalf("b's list = %+v", list)
	}
	r := e.Do(Request{Method: http.MethodDelete, Path: optOutsPath + "/" + url.PathEscape(p), Header: b.Key()})
	wantError(t, r, http.StatusNotFound, "not_found")
	if list, _ := e.optOuts(a, nil); len(list) != 1 {
		t.Fatalf("a's list after b's delete = %+v", list)
	}
}
