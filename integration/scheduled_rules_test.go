package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/senders"
)

// docs/api.md, §Scheduled sends and §Campaigns (Release and pacing): the
// client_reference and the usage of a scheduled send across its release,
// and the sticky sender of a campaign when that sender is not active.

// byReference lists org's messages with client_reference ref.
func (e *msgEnv) byReference(org *Org, ref string) []scheduledMsg {
	e.t.Helper()
	r := e.Do(Request{Method: http.MethodGet, Path: messagesPath + "?" + url.Values{"client_reference": {ref}}.Encode(), Header: org.Key()})
	if r.Status != http.StatusOK {
		e.t.Fatalf("client_reference=%s = %d %s", ref, r.Status, r.Body)
	}
	var page struct {
		Data []scheduledMsg `json:"data"`
	}
	r.JSON(e.t, &page)
	return page.Data
}

// orNone formats an id that may be null.
func orNone(id *int64) string {
	if id == nil {
		return "none"
	}
	return fmt.Sprint(*id)
}

// The client_reference given at scheduling stays on the message through
// its release: the history's client_reference filter finds it while it
// waits and once delivered, the released message carries it, and so do
// its message.sent and message.delivered events.
func TestScheduledClientReferenceSurvivesRelease(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true, Env: map[string]string{"WEBHOOK_ALLOW_PRIVATE": "true"}})
	org := e.Register(t)
	hooks, _ := subscribeHooks(t, e.Env, org.Key(), "message.sent", "message.delivered")
	sid := e.activeSender(org, phoneN(1))
	e.recipient(phoneN(2))

	const ref = "order-49"
	body := scheduled(sid, phoneN(2), "your order is ready", dueIn(3*time.Second))
	body["client_reference"] = ref
	m := e.mustSchedule(org, body)
	if m.ClientReference == nil || *m.ClientReference != ref {
		t.Fatalf("scheduled message %+v: want client_reference %q", m, ref)
	}
	other := scheduled(sid, phoneN(2), "another one", dueIn(time.Hour))
	other["client_reference"] = "order-50"
	e.mustSchedule(org, other)

	if got := e.byReference(org, ref); len(got) != 1 || got[0].ID != m.ID || got[0].Status != "scheduled" {
		t.Fatalf("client_reference=%s before the release: %+v, want message %d scheduled", ref, got, m.ID)
	}
	released := e.waitStatus(org, m.ID, "delivered", 30*time.Second)
	if released.ClientReference == nil || *released.ClientReference != ref || released.RecipientUserID == nil {
		t.Fatalf("released message %+v: want client_reference %q", released, ref)
	}
	if got := e.byReference(org, ref); len(got) != 1 || got[0].ID != m.ID || got[0].Status != "delivered" {
		t.Fatalf("client_reference=%s after the release: %+v, want message %d delivered", ref, got, m.ID)
	}

	poll(t, 30*time.Second, func() (bool, string) {
		got := hooks.statuses()
		seen := map[string]bool{}
		for _, s := range got {
			seen[s] = true
		}
		return seen[fmt.Sprintf("message.sent:%d:sent", m.ID)] && seen[fmt.Sprintf("message.delivered:%d:delivered", m.ID)],
			fmt.Sprintf("events %v", got)
	})
	hooks.mu.Lock()
	defer hooks.mu.Unlock()
	for _, p := range hooks.payloads {
		data, _ := p["data"].(map[string]any)
		if id, _ := data["id"].(float64); int64(id) == m.ID && data["client_reference"] != ref {
			t.Errorf("%v about message %d: client_reference %v, want %q", p["type"], m.ID, data["client_reference"], ref)
		}
	}
}

// Usage across a release: while it waits a scheduled message counts under
// totals.scheduled and its sender's scheduled, on no day; released, it
// leaves scheduled and counts once in the release day's sends and the
// sender's used_today. A canceled one counts in neither.
func TestScheduledUsageAcrossRelease(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true})
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	e.recipient(phoneN(2))

	soon := e.mustSchedule(org, scheduled(sid, phoneN(2), "soon", dueIn(4*time.Second)))
	e.mustSchedule(org, scheduled(sid, phoneN(2), "next week", dueIn(7*24*time.Hour)))
	canceled := e.mustSchedule(org, scheduled(sid, phoneN(2), "never", dueIn(time.Hour)))
	if r := e.cancel(org, canceled.ID); r.Status != http.StatusOK {
		t.Fatalf("cancel = %d %s", r.Status, r.Body)
	}

	before := e.usage(usagePath, org.Key())
	if got := e.getScheduled(org, soon.ID).Status; got != "scheduled" {
		t.Fatalf("the message was %s by the time usage was read; the machine is too slow for this test", got)
	}
	if before.Totals != (counts{Scheduled: 2}) || len(before.PerSender) != 1 ||
		before.PerSender[0].Scheduled != 2 || before.PerSender[0].UsedToday != 0 {
		t.Fatalf("usage with two scheduled and one canceled: totals %+v, per sender %+v", before.Totals, before.PerSender)
	}
	for _, d := range before.Daily {
		if d.counts != (counts{}) {
			t.Fatalf("usage before the release counts on %s: %+v", d.Date, d.counts)
		}
	}

	e.waitStatus(org, soon.ID, "delivered", 30*time.Second)
	after := e.usage(usagePath, org.Key())
	if after.Totals != (counts{Delivered: 1, Total: 1, Scheduled: 1}) || len(after.PerSender) != 1 {
		t.Fatalf("usage after the release: totals %+v, want 1 delivered of 1 and 1 scheduled", after.Totals)
	}
	if s := after.PerSender[0]; s.Scheduled != 1 || s.UsedToday != 1 || s.RemainingToday != s.DailyLimit-1 {
		t.Fatalf("the sender's usage after the release %+v: want scheduled 1, used_today 1", s)
	}
	today := e.Clock.Now().UTC().Format(time.DateOnly)
	total := 0
	for _, d := range after.Daily {
		total += d.Total
		if d.Date == today && d.counts != (counts{Delivered: 1, Total: 1}) {
			t.Fatalf("usage of the release day %s: %+v, want 1 delivered of 1", d.Date, d.counts)
		}
	}
	if total != 1 || e.acceptCounter(org, sid, e.Clock.Now()) != 1 {
		t.Fatalf("the released message counted %d times over the days, accept counter %d; want once",
			total, e.acceptCounter(org, sid, e.Clock.Now()))
	}
}

// Sticky sender and an inactive sender: a recipient whose last message
// came from pool sender A, in a campaign over {A, B} where A is suspended
// by the release, is released from B (neither skipped nor left waiting),
// while a recipient sticky to an active pool sender stays on it.
func TestCampaignStickySenderInactive(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true})
	org := e.Register(t)
	a, b, c := e.activeSender(org, phoneN(1)), e.activeSender(org, phoneN(2)), e.activeSender(org, phoneN(3))
	stickyA, stickyC, fresh := phoneN(10), phoneN(11), phoneN(12)
	for _, p := range []string{stickyA, stickyC, fresh} {
		e.recipient(p)
	}
	for _, w := range []struct {
		sid int64
		to  string
	}{{a, stickyA}, {c, stickyC}} {
		m := accepted(t, e.send(org, text(w.sid, w.to, "Your order shipped.")))
		e.waitStatus(org, m.ID, "delivered", 30*time.Second)
	}

	// The service's time is the real time, River's, as the campaigns'
	// send_at comes (as in TestCampaignSendAt).
	e.Clock.Set(time.Now())
	cc := newCampClient(t, e.Server.URL, org)
	sendAt := dueIn(4 * time.Second)
	suspended := cc.create(map[string]any{"name": "A suspended", "sender_number_ids": []int64{a, b}, "type": "text",
		"content": "Sale today.", "send_at": at(sendAt)})
	cc.addJSON(suspended.ID, []map[string]any{{"phone": stickyA}, {"phone": fresh}})
	// B first: a recipient that was not sticky could go to it by the tie.
	active := cc.create(map[string]any{"name": "C active", "sender_number_ids": []int64{b, c}, "type": "text",
		"content": "Sale today.", "send_at": at(sendAt)})
	cc.addJSON(active.ID, []map[string]any{{"phone": stickyC}})
	for _, id := range []int64{suspended.ID, active.ID} {
		if v := cc.action(id, "start"); v.Status != "scheduled" {
			t.Fatalf("started campaign %d is %s, want scheduled", id, v.Status)
		}
	}
	if _, err := e.App.Senders.Suspend(context.Background(), senders.AdminTarget{Phone: phoneN(1), OrgID: org.ID}); err != nil {
		t.Fatal(err)
	}
	if left := time.Until(sendAt); left <= 0 {
		t.Fatalf("the sender was suspended %s after the campaigns' send_at; the machine is too slow for this test", -left)
	}
	e.Clock.Set(sendAt)

	for _, x := range []struct {
		id   int64
		want map[string]int64
	}{{suspended.ID, map[string]int64{stickyA: b, fresh: b}}, {active.ID, map[string]int64{stickyC: c}}} {
		v := cc.wait(x.id, 60*time.Second, "completed", func(v campView) bool { return v.Status == "completed" })
		if v.Counts["delivered"] != len(x.want) || v.Counts["skipped"] != 0 {
			t.Fatalf("campaign %d completed with counts %v, skip reasons %v; want %d delivered", x.id, v.Counts, v.SkipReasons, len(x.want))
		}
		for _, r := range cc.recipients(x.id, "") {
			if r.SenderNumberID == nil || *r.SenderNumberID != x.want[r.Phone] || r.MessageID == nil {
				t.Errorf("campaign %d: recipient %s (%s) released from sender %s, want %d", x.id, r.Phone, r.Status,
					orNone(r.SenderNumberID), x.want[r.Phone])
			}
		}
		for _, m := range cc.campaignMessages(x.id) {
			if m.SenderNumberID != x.want[m.ToPhone] {
				t.Errorf("campaign %d: message to %s from sender %d, want %d", x.id, m.ToPhone, m.SenderNumberID, x.want[m.ToPhone])
			}
		}
	}
}
