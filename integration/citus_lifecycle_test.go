package integration

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/consent"
)

// citusOrg is one organization of TestCitusCluster: its sender number,
// the recipient that writes to it, and its webhook endpoint with the local
// server that takes its requests.
type citusOrg struct {
	org       *Org
	sid       int64
	phone     string
	recipient string
	hook      webhookEndpoint
	rcv       *receiver
}

// citusEvents are the events each organization's endpoint subscribes to.
var citusEvents = []string{"message.sent", "message.delivered", "message.read", "message.received", "campaign.completed"}

// citusLifecycle runs, for each organization on its distributed schema,
// the message lifecycle after its recipient's first message (received):
// a send answering it is delivered (on the platform and in the
// recipient's inbox on the network, once, with its reference), read
// (the network's read receipt), and answered by the recipient (an inbound
// message on the same conversation). Each organization's server hears
// message.received, .sent, .delivered, .read and .received once each,
// about its own messages only (their contents name the organization).
func citusLifecycle(t *testing.T, e *msgEnv, runs []*citusOrg) {
	t.Helper()
	ctx := t.Context()
	sent := make([]message, len(runs))
	for i, r := range runs {
		sent[i] = accepted(t, e.send(r.org, text(r.sid, r.recipient, "hello back from "+r.org.Name)))
	}
	for i, r := range runs {
		e.waitStatus(r.org, sent[i].ID, "delivered", time.Minute)
		inbox, err := e.net.Inbox(ctx, r.recipient)
		if err != nil {
			t.Fatal(err)
		}
		ref, n := fmt.Sprintf("%s:%d", r.org.Tenant.Schema, sent[i].ID), 0
		for _, m := range inbox {
			if m.FromPhone == r.phone {
				n++
				if m.Reference != ref || m.Content != "hello back from "+r.org.Name {
					t.Fatalf("%s's inbox holds %+v from %s, want only %s's message %s", r.recipient, m, r.phone, r.org.Name, ref)
				}
			}
		}
		if n != 1 {
			t.Fatalf("%s's inbox holds %d messages from %s, want 1 (%s)", r.recipient, n, r.phone, ref)
		}
	}
	for i, r := range runs {
		if _, err := e.net.Read(ctx, r.recipient, r.phone); err != nil {
			t.Fatal(err)
		}
		if m := e.waitStatus(r.org, sent[i].ID, "read", time.Minute); m.ReadAt == nil {
			t.Fatalf("%s's message %d is read without read_at", r.org.Name, m.ID)
		}
	}
	for _, r := range runs {
		e.writeTo(r.org, r.recipient, r.phone, "a reply to "+r.org.Name)
	}
	for i, r := range runs {
		got := r.rcv.until(t, 5, r.org.Name+"'s five message events")
		seen := map[string]int{}
		for _, h := range got {
			if !strings.HasSuffix(h.Data.Content, r.org.Name) {
				t.Fatalf("%s's endpoint got %s about %q: another organization's message", r.org.Name, h.Type, h.Data.Content)
			}
			key := h.Type
			if h.Data.ID == sent[i].ID && h.Data.Direction == "outbound" {
				key += ":sent"
			}
			seen[key]++
		}
		want := map[string]int{"message.received": 2, "message.sent:sent": 1, "message.delivered:sent": 1, "message.read:sent": 1}
		if !maps.Equal(seen, want) {
			t.Fatalf("%s's endpoint got %v, want %v", r.org.Name, seen, want)
		}
		conv := e.getMessage(r.org, sent[i].ID).ConversationID
		var in []hook
		for _, h := range got {
			if h.Type == "message.received" {
				in = append(in, h)
			}
		}
		if conv == nil || in[1].Data.ConversationID == nil || *in[1].Data.ConversationID != *conv {
			t.Fatalf("%s: the reply's conversation %v, the message's %v: want the same", r.org.Name, in[1].Data.ConversationID, conv)
		}
	}
}

// citusCampaigns runs a three-recipient campaign for each organization
// on its distributed schema, all at once, and waits for each to complete
// with its three messages delivered (each once on the network) and
// campaign.completed at its endpoint.
func citusCampaigns(t *testing.T, e *msgEnv, runs []*citusOrg) {
	t.Helper()
	const n = 3
	is := make([]int, n)
	for i := range is {
		is[i] = i
	}
	e.bulkAccounts(is)
	clients := make([]*campClient, len(runs))
	ids := make([]int64, len(runs))
	for i, r := range runs {
		clients[i] = newCampClient(t, e.Server.URL, r.org)
		c := clients[i].create(map[string]any{"name": "citus", "sender_number_ids": []int64{r.sid}, "type": "text",
			"content": "News from " + r.org.Name})
		rows := make([]map[string]any, n)
		for j := range rows {
			rows[j] = map[string]any{"phone": bulkPhone(j)}
		}
		if a := clients[i].addJSON(c.ID, rows); a.Added != n {
			t.Fatalf("%s's campaign: added %+v", r.org.Name, a)
		}
		ids[i] = c.ID
	}
	for i := range runs {
		clients[i].action(ids[i], "start")
	}
	for i, r := range runs {
		done := clients[i].wait(ids[i], 2*time.Minute, r.org.Name+"'s campaign completed",
			func(v campView) bool { return v.Status == "completed" })
		if done.Counts["delivered"] != n || done.Counts["total"] != n {
			t.Fatalf("%s's campaign completed with counts %v, want %d delivered", r.org.Name, done.Counts, n)
		}
		want := map[string]int{r.recipient: 1}
		for j := range n {
			want[bulkPhone(j)] = 1
		}
		if got := e.networkByRecipient([]string{r.phone}); !maps.Equal(got, want) {
			t.Fatalf("the network's messages from %s by recipient: %v, want %v", r.phone, got, want)
		}
	}
	// 5 message events, then 2 per campaign message and campaign.completed.
	for _, r := range runs {
		got := r.rcv.until(t, 5+2*n+1, r.org.Name+"'s campaign events")
		completed := 0
		for _, h := range got[5:] {
			if h.Type == "campaign.completed" {
				completed++
			} else if h.Data.Content != "News from "+r.org.Name {
				t.Fatalf("%s's endpoint got %s about %q", r.org.Name, h.Type, h.Data.Content)
			}
		}
		if completed != 1 {
			t.Fatalf("%s's endpoint got campaign.completed %d times", r.org.Name, completed)
		}
	}
}

// citusExactlyOnce checks that each organization's endpoint got each of
// its events exactly once: once every delivery's outcome is recorded, as
// many requests as the tenant schema holds deliveries, each succeeded in
// one attempt, with distinct webhook-id headers.
func citusExactlyOnce(t *testing.T, e *msgEnv, runs []*citusOrg) {
	t.Helper()
	for _, r := range runs {
		var deliveries, attempts, pending int
		poll(t, 30*time.Second, func() (bool, string) {
			if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT count(*), coalesce(sum(attempts), 0),
				count(*) FILTER (WHERE state <> 'succeeded') FROM `+r.org.Tenant.Table("webhook_deliveries")).
				Scan(&deliveries, &attempts, &pending); err != nil {
				t.Fatal(err)
			}
			return pending == 0, fmt.Sprintf("%s: %d of %d webhook deliveries not succeeded", r.org.Name, pending, deliveries)
		})
		got := r.rcv.hooks()
		ids := map[string]bool{}
		for _, h := range got {
			ids[h.header.Get("webhook-id")] = true
		}
		if attempts != deliveries || len(got) != deliveries || len(ids) != len(got) {
			t.Fatalf("%s: %d webhook deliveries (%d attempts), %d requests with %d webhook-ids: want each once",
				r.org.Name, deliveries, attempts, len(got), len(ids))
		}
	}
}

// citusConsentAndTemplates, for each organization on its distributed
// schema: a template is submitted and reviewed by the network (its review
// job written through the tenant's job outbox), and the recipient's STOP
// puts them on the opt-out list and gets the confirmation from the
// organization's number (the reply job likewise), once.
func citusConsentAndTemplates(t *testing.T, e *msgEnv, runs []*citusOrg) {
	t.Helper()
	for _, r := range runs {
		key := r.org.Key()
		tpl := createTemplate(t, e.Env, key, templateBody("citus_"+strings.ToLower(r.org.Tenant.Schema), "en_US"))
		if got := reviewed(t, e.Env, key, tpl.ID); got.Status != "approved" {
			t.Fatalf("%s's template is %s after its review, want approved", r.org.Name, got.Status)
		}
		e.writeTo(r.org, r.recipient, r.phone, "STOP")
	}
	for _, r := range runs {
		poll(t, 30*time.Second, func() (bool, string) {
			got := e.inboxFrom(r.recipient, r.phone)
			n := 0
			for _, m := range got {
				if m == consent.DefaultOptOutReply {
					n++
				}
			}
			return n == 1, fmt.Sprintf("%s's inbox from %s: %q, want the opt-out confirmation once", r.recipient, r.phone, got)
		})
		var listed bool
		if err := e.App.DB.Pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT FROM `+r.org.Tenant.Table("opt_outs")+
			` WHERE phone = $1)`, r.recipient).Scan(&listed); err != nil || !listed {
			t.Fatalf("%s: %s on the opt-out list: %v (%v), want listed after STOP", r.org.Name, r.recipient, listed, err)
		}
	}
}
