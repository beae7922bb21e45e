package integration

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/senders"
)

// isoOrg is one organization of the three-organization isolation test and
// what it owns: every schema numbers its rows from 1, so the same ids name
// different rows in each organization.
type isoOrg struct {
	*Org
	name     string // its messages' content starts with it
	sender   int64
	phone    string
	to       string
	messages map[int64]string // id → content
	// keyT and keyC are extra keys the Tenant and the Central subtests
	// revoke; keyC's id only, keyT's plain value too.
	keyT         keyResource
	keyCID       int64
	keyCPlain    string
	tenantKeyIDs []int64 // every key of the organization
}

// Three organizations; the second and the third read, list, revoke and
// send with their own ids on the Tenant API (X-Api-Key) and the Central
// API (Bearer), and each gets exactly its own rows back while the same ids
// name other rows in the other schemas. A request routed to another
// organization's schema (the first's, say) answers with that
// organization's rows and fails here.
func TestIsolationThreeOrganizationsBothAPIs(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	ctx := context.Background()
	var orgs []*isoOrg
	for i, name := range []string{"first", "second", "third"} {
		o := &isoOrg{Org: e.Register(t), name: name, phone: phoneN(100 + i), to: phoneN(200 + i), messages: map[int64]string{}}
		o.sender = e.activeSender(o.Org, o.phone)
		e.recipient(o.to)
		// first: 1 message, second: 2, third: 3; ids 1.. in each schema.
		for j := range i + 1 {
			content := fmt.Sprintf("%s-%d", name, j)
			m := accepted(t, e.send(o.Org, text(o.sender, o.to, content)))
			o.messages[m.ID] = content
		}
		o.keyT = mustCreateKey(t, e.Env, o.APIKey, "usage.read")
		o.keyCPlain, o.keyCID = e.CentralKey(t, o.Org, "messages.read")
		o.tenantKeyIDs = []int64{o.APIKeyID, o.keyT.ID, o.keyCID}
		orgs = append(orgs, o)
	}
	if orgs[1].sender != orgs[0].sender || orgs[2].sender != orgs[0].sender {
		t.Fatalf("sender ids %d, %d, %d: the test wants the same id in every schema", orgs[0].sender, orgs[1].sender, orgs[2].sender)
	}

	// The group returns once its parallel subtests are done.
	t.Run("orgs", func(t *testing.T) {
		for _, o := range orgs[1:] {
			isolatedOrg(t, e, o)
		}
	})
	// The first organization's keys survived the others' revocations, and
	// each schema holds exactly its own messages.
	for _, k := range []string{orgs[0].APIKey, *orgs[0].keyT.PlainTextKey, orgs[0].keyCPlain} {
		if r := e.Do(Request{Method: http.MethodGet, Path: tenantMe, Header: KeyHeader(k)}); r.Status != http.StatusOK {
			t.Errorf("the first organization's key after the others' revocations = %d %s", r.Status, r.Body)
		}
	}
	for _, o := range orgs {
		rows, err := e.App.DB.Pool.Query(ctx, `SELECT id, content FROM `+o.Tenant.Table("messages"))
		if err != nil {
			t.Fatal(err)
		}
		got := map[int64]string{}
		for rows.Next() {
			var (
				id      int64
				content string
			)
			if err := rows.Scan(&id, &content); err != nil {
				t.Fatal(err)
			}
			got[id] = content
		}
		rows.Close()
		if fmt.Sprint(got) != fmt.Sprint(o.messages) {
			t.Errorf("schema %s holds %v, want %v", o.Tenant.Schema, got, o.messages)
		}
	}
}

// isolatedOrg runs o's reads, lists, sends and revocations on both APIs
// as a parallel subtest of t.
func isolatedOrg(t *testing.T, e *msgEnv, o *isoOrg) {
	t.Run(o.name, func(t *testing.T) {
		t.Parallel()
		tenant, central := o.Key(), o.Bearer()
		// Sends first, on the Tenant API, with the organization's own
		// sender id (1, as in every schema), with and without an
		// Idempotency-Key.
		for j, h := range []map[string]string{nil, {"Idempotency-Key": "iso-" + o.name}} {
			content := fmt.Sprintf("%s-sent-%d", o.name, j)
			m := accepted(t, e.send(o.Org, text(o.sender, o.to, content), h))
			if m.SenderNumberID != o.sender || m.Content != content {
				t.Fatalf("sent %+v", m)
			}
			o.messages[m.ID] = content
		}
		for _, api := range []struct {
			name   string
			base   string
			header map[string]string
		}{
			{"tenant", "/api/v1", tenant},
			{"central", centralPath, central},
		} {
			get := func(path string, v any) {
				t.Helper()
				r := e.Do(Request{Method: http.MethodGet, Path: api.base + path, Header: api.header})
				if r.Status != http.StatusOK {
					t.Fatalf("%s GET %s = %d %s", api.name, path, r.Status, r.Body)
				}
				r.JSON(t, v)
			}
			// Who am I.
			var me struct {
				Data struct {
					Organization struct {
						ID int64 `json:"id"`
					} `json:"organization"`
				} `json:"data"`
			}
			get("/me", &me)
			if me.Data.Organization.ID != o.ID {
				t.Fatalf("%s /me is organization %d, want %d", api.name, me.Data.Organization.ID, o.ID)
			}
			// Sender numbers: the list, and (Central) by id.
			var list struct {
				Data []sender `json:"data"`
			}
			get("/sender-numbers", &list)
			if len(list.Data) != 1 || list.Data[0].ID != o.sender || list.Data[0].Phone != o.phone {
				t.Fatalf("%s sender numbers %+v, want only %s", api.name, list.Data, o.phone)
			}
			if api.name == "central" {
				var one struct {
					Data sender `json:"data"`
				}
				get(fmt.Sprintf("/sender-numbers/%d", o.sender), &one)
				if one.Data.Phone != o.phone {
					t.Fatalf("central sender %d is %s, want %s", o.sender, one.Data.Phone, o.phone)
				}
			}
			// Messages: the list holds exactly its own, and each own id
			// reads its own content.
			var page struct {
				Data []message `json:"data"`
			}
			get("/messages?limit=100", &page)
			got := map[int64]string{}
			for _, m := range page.Data {
				got[m.ID] = m.Content
			}
			if fmt.Sprint(got) != fmt.Sprint(o.messages) {
				t.Fatalf("%s history %v, want %v", api.name, got, o.messages)
			}
			for id, content := range o.messages {
				var one struct {
					Data message `json:"data"`
				}
				get(fmt.Sprintf("/messages/%d", id), &one)
				if one.Data.Content != content || one.Data.SenderNumberID != o.sender {
					t.Fatalf("%s message %d = %q, want %q", api.name, id, one.Data.Content, content)
				}
			}
			// An id beyond its own exists in the third schema only.
			wantError(t, e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("%s/messages/%d", api.base, len(o.messages)+1),
				Header: api.header}), http.StatusNotFound, "not_found")
			// Usage counts its own sender and messages.
			var usage struct {
				Data struct {
					Totals    struct{ Total int } `json:"totals"`
					PerSender []struct {
						ID    int64  `json:"sender_number_id"`
						Phone string `json:"phone"`
						Used  int    `json:"used_today"`
					} `json:"per_sender"`
				} `json:"data"`
			}
			get("/usage", &usage)
			if usage.Data.Totals.Total != len(o.messages) || len(usage.Data.PerSender) != 1 ||
				usage.Data.PerSender[0].Phone != o.phone || usage.Data.PerSender[0].Used != len(o.messages) {
				t.Fatalf("%s usage %+v, want %d messages of %s", api.name, usage.Data, len(o.messages), o.phone)
			}
			// Keys: its own only.
			var keys struct {
				Data []keyResource `json:"data"`
			}
			get("/api-keys?limit=100", &keys)
			var ids []int64
			for _, k := range keys.Data {
				ids = append(ids, k.ID)
			}
			slices.Sort(ids)
			want := slices.Sorted(slices.Values(o.tenantKeyIDs))
			if !slices.Equal(ids, want) {
				t.Fatalf("%s keys %v, want %v", api.name, ids, want)
			}
		}
		// Lookup names the sender by its own id: the recipient "is" the
		// sender itself only if id 1 is read in this schema.
		r := e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("/api/v1/contacts/lookup?phone=%%2B%s&sender_number_id=%d",
			strings.TrimPrefix(o.phone, "+"), o.sender), Header: tenant})
		if r.Status != http.StatusOK || r.Map(t)["reason_code"] != "self" {
			t.Fatalf("lookup of its own sender's phone = %d %s, want reason self", r.Status, r.Body)
		}
		// Revocations: one key on each API; it stops working at once,
		// and the other organizations' keys do not.
		if r := e.Do(Request{Method: http.MethodDelete, Path: tenantKeys + "/" + strconv.FormatInt(o.keyT.ID, 10), Header: tenant}); r.Status != http.StatusNoContent {
			t.Fatalf("tenant revoke = %d %s", r.Status, r.Body)
		}
		if r := e.Do(Request{Method: http.MethodDelete, Path: centralPath + "/api-keys/" + strconv.FormatInt(o.keyCID, 10), Header: central}); r.Status != http.StatusNoContent {
			t.Fatalf("central revoke = %d %s", r.Status, r.Body)
		}
		for _, k := range []string{*o.keyT.PlainTextKey, o.keyCPlain} {
			wantError(t, e.Do(Request{Method: http.MethodGet, Path: tenantMe, Header: KeyHeader(k)}), http.StatusUnauthorized, "api_key_revoked")
		}
		var audit []string
		for _, a := range auditLog(t, e.Env, central, "action=api_key.revoke") {
			audit = append(audit, a.who())
		}
		wantAudit := []string{
			fmt.Sprintf("user:%d api_key.revoke api_key:%d", o.OwnerID, o.keyCID),
			fmt.Sprintf("user:%d api_key.revoke api_key:%d", o.OwnerID, o.keyT.ID),
		}
		if !slices.Equal(audit, wantAudit) {
			t.Fatalf("audit log %q, want %q", audit, wantAudit)
		}
	})
}

// A sender suspended after the send path last looked at it: the send
// names its sender by id and phone, so the service reads no sender row
// before the acceptance statement (the phone comes from the request, not
// from senders.Resolve and CheckSendable), and the statement's own
// status = 'active' check is what refuses it, alone, with and without an
// Idempotency-Key, and for several sends accepted together. Nothing is
// stored and no delivery is queued.
func TestSuspendedSenderRefusedByAcceptance(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	ctx := context.Background()
	org := e.Register(t)
	const from, to = "+14155550301", "+14155550302"
	sid := e.activeSender(org, from)
	e.recipient(to)
	body := func(content string) map[string]any {
		b := text(sid, to, content)
		b["sender_phone"] = from
		return b
	}
	// A send before the suspension goes through the same path.
	accepted(t, e.send(org, body("before")))
	e.waitMoved(org)

	// The operator suspends the number (senders.Service, its own
	// transaction): the messages service is not told.
	if _, err := e.App.Senders.Suspend(ctx, senders.AdminTarget{Phone: from}); err != nil {
		t.Fatal(err)
	}
	count := func() (messages, used, jobs int) {
		t.Helper()
		if err := e.App.DB.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+org.Tenant.Table("messages")+`),
			(SELECT coalesce(sum(used), 0) FROM `+org.Tenant.Table("daily_usage")+` WHERE side = 'accept'),
			(SELECT count(*) FROM river.river_job WHERE kind = 'message_delivery')`).Scan(&messages, &used, &jobs); err != nil {
			t.Fatal(err)
		}
		return
	}
	m0, u0, j0 := count()

	tests := []struct {
		name    string
		headers map[string]string
		n       int // sends at once
	}{
		{"alone", nil, 1},
		{"with an Idempotency-Key", map[string]string{"Idempotency-Key": "suspended-1"}, 1},
		{"several at once", nil, 6},
	}
	t.Run("sends", func(t *testing.T) {
		for _, tt := range tests {
			refuseSends(t, e, org, tt.name, tt.headers, tt.n, body)
		}
	})
	if m, u, j := count(); m != m0 || u != u0 || j != j0 {
		t.Errorf("after the refused sends: %d messages, %d used, %d jobs; want %d, %d, %d", m, u, j, m0, u0, j0)
	}
}

// refuseSends sends n messages at once as a parallel subtest of t and
// wants each refused: 422 sender_not_active, sender_status suspended.
func refuseSends(t *testing.T, e *msgEnv, org *Org, name string, headers map[string]string, n int, body func(string) map[string]any) {
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		results := make(chan *Response, n)
		for i := range n {
			go func() {
				h := org.Key()
				for k, v := range headers {
					h[k] = v
				}
				r, err := e.Send(Request{Method: http.MethodPost, Path: messagesPath, Header: h, Body: body(fmt.Sprintf("%s %d", name, i))})
				if err != nil {
					t.Error(err)
				}
				results <- r
			}()
		}
		for range n {
			r := <-results
			if r == nil {
				continue
			}
			m := wantError(t, r, http.StatusUnprocessableEntity, "sender_not_active")
			if m["sender_status"] != "suspended" {
				t.Errorf("refusal %v, want sender_status suspended", m)
			}
		}
	})
}
