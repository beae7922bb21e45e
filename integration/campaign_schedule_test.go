package integration

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/templates"
)

// docs/api.md, §Campaigns: a campaign with send_at through the real
// release job, and the release of a template campaign over a pool whose
// sender and template change while it runs.

// TestCampaignSendAt: a campaign with send_at starts scheduled, its
// release job waits in River for the send_at and nothing is released
// before it; at its send_at the release job turns it running (one
// campaign.started), releases every recipient and completes it (one
// campaign.completed).
func TestCampaignSendAt(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true, Env: map[string]string{"WEBHOOK_ALLOW_PRIVATE": "true"}})
	org := e.Register(t)
	key := org.Key()
	hooks, _ := subscribeHooks(t, e.Env, key, "campaign.started", "campaign.completed")
	sender := e.activeSender(org, phoneN(1))
	const n = 20
	audience := make([]int, n)
	rows := make([]map[string]any, n)
	for i := range n {
		audience[i], rows[i] = i, map[string]any{"phone": bulkPhone(i)}
	}
	e.bulkAccounts(audience)

	// The service's time is the real time here, River's: send_at is a
	// few seconds ahead of both.
	e.Clock.Set(time.Now())
	sendAt := dueIn(4 * time.Second)
	c := newCampClient(t, e.Server.URL, org)
	camp := c.create(map[string]any{"name": "later", "sender_number_ids": []int64{sender}, "type": "text",
		"content": "Doors open now.", "send_at": at(sendAt)})
	c.addJSON(camp.ID, rows)
	if v := c.action(camp.ID, "start"); v.Status != "scheduled" {
		t.Fatalf("started with send_at ahead: %s, want scheduled", v.Status)
	}
	e.waitMoved(org)
	var (
		state       string
		scheduledAt time.Time
	)
	if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT state::text, scheduled_at FROM river.river_job
		WHERE kind = 'campaign_release' AND (args->>'campaign_id')::bigint = $1 AND (args->>'org_id')::bigint = $2`,
		camp.ID, org.ID).Scan(&state, &scheduledAt); err != nil {
		t.Fatal(err)
	}
	if state != "scheduled" || !scheduledAt.Equal(sendAt) {
		t.Fatalf("release job %s at %s, want scheduled at the send_at %s", state, scheduledAt, sendAt)
	}
	// From here the service's clock is at the send_at: only River's
	// schedule of the release job holds the campaign until then.
	e.Clock.Set(sendAt)
	poll(t, 30*time.Second, func() (bool, string) {
		before := time.Now().Before(sendAt.Add(-100 * time.Millisecond))
		v := c.get(camp.ID)
		if before && (v.Status != "scheduled" || v.Counts["pending"] != n || e.campaignMessageCount(org, camp.ID) != 0 ||
			len(hooks.statuses()) != 0) {
			t.Fatalf("%s before its send_at the campaign is %s with counts %v and events %v",
				time.Until(sendAt), v.Status, v.Counts, hooks.statuses())
		}
		return !time.Now().Before(sendAt), "waiting for the send_at"
	})

	done := c.wait(camp.ID, 60*time.Second, "completed", func(v campView) bool { return v.Status == "completed" })
	if done.Counts["delivered"] != n || done.Counts["total"] != n {
		t.Fatalf("completed with counts %v, want %d delivered", done.Counts, n)
	}
	full := getCampaign(t, e.Env, key, camp.ID)
	if full.StartedAt == nil || *full.StartedAt != at(sendAt) {
		t.Fatalf("started_at %v, want the send_at %s", full.StartedAt, at(sendAt))
	}
	to := map[string]int{}
	for _, m := range c.campaignMessages(camp.ID) {
		to[m.ToPhone]++
		if m.CreatedAt < at(sendAt) {
			t.Fatalf("message %d created %s, before the send_at %s", m.ID, m.CreatedAt, at(sendAt))
		}
	}
	for i := range n {
		if to[bulkPhone(i)] != 1 {
			t.Fatalf("messages by recipient %v: want one each", to)
		}
	}
	want := []string{fmt.Sprintf("campaign.completed:%d:completed", camp.ID), fmt.Sprintf("campaign.started:%d:running", camp.ID)}
	poll(t, 30*time.Second, func() (bool, string) {
		got := hooks.statuses()
		slices.Sort(got)
		return slices.Equal(got, want), fmt.Sprintf("events %v, want %v", got, want)
	})
	poll(t, 10*time.Second, func() (bool, string) {
		s := e.campaignJobState(org, camp.ID)
		return s == "completed", "release job " + s
	})
}

// TestCampaignTemplateRelease: a template campaign's recipients each get
// the template rendered with their own variables. A pool sender suspended
// while the campaign runs is left out: its recipients stay pending (never
// skipped as sender_not_active) and go out from the other sender. A
// template paused while it runs skips the recipients still pending with
// template_not_approved, counted in skip_reasons, and the campaign
// completes.
func TestCampaignTemplateRelease(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true, Env: map[string]string{"SENDER_RATE": "5", "SENDER_BURST": "5"}})
	org := e.Register(t)
	key := org.Key()
	s1, s2 := e.activeSender(org, phoneN(1)), e.activeSender(org, phoneN(2))
	tpl := createTemplate(t, e.Env, key, templateBody("order_update", "en_US"))
	if got := reviewed(t, e.Env, key, tpl.ID); got.Status != "approved" {
		t.Fatalf("template is %s", got.Status)
	}
	const n = 90
	audience := make([]int, n)
	rows := make([]map[string]any, n)
	rendered := map[string]string{}
	for i := range n {
		order, name := fmt.Sprintf("A-%d", i), fmt.Sprintf("Name%d", i)
		audience[i] = i
		rows[i] = map[string]any{"phone": bulkPhone(i), "variables": map[string]string{"1": order, "2": name}}
		rendered[bulkPhone(i)] = "Order " + order + "\n\nHello " + name + ", your order ships today.\n\nReply STOP to opt out"
	}
	e.bulkAccounts(audience)
	c := newCampClient(t, e.Server.URL, org)
	camp := c.create(map[string]any{"name": "orders", "sender_number_ids": []int64{s1, s2},
		"template": map[string]string{"name": "order_update", "language": "en_US"}})
	if a := c.addJSON(camp.ID, rows); a.Added != n {
		t.Fatalf("added %+v", a)
	}
	e.logCampaignJobsOnFailure(org, camp.ID)
	// pauseIdle pauses the campaign and waits until its release job ended
	// and none of its messages is queued.
	pauseIdle := func() int {
		t.Helper()
		c.action(camp.ID, "pause")
		poll(t, 10*time.Second, func() (bool, string) {
			s := e.campaignJobState(org, camp.ID)
			return s == "completed", "release job " + s
		})
		c.wait(camp.ID, 30*time.Second, "nothing queued", func(v campView) bool { return v.Counts["queued"] == 0 })
		return e.campaignMessageCount(org, camp.ID)
	}

	c.action(camp.ID, "start")
	c.wait(camp.ID, 30*time.Second, "20 released", func(v campView) bool { return v.released() >= 20 })
	atSuspension := pauseIdle()
	if _, err := e.App.Senders.Suspend(context.Background(), senders.AdminTarget{Phone: phoneN(2), OrgID: org.ID}); err != nil {
		t.Fatal(err)
	}
	c.action(camp.ID, "resume")
	c.wait(camp.ID, 30*time.Second, "20 more released", func(v campView) bool { return v.released() >= atSuspension+20 })
	atTemplatePause := pauseIdle()
	if _, _, err := e.App.Templates.SetStatus(context.Background(), org.Tenant, tpl.ID, templates.StatusPaused, ""); err != nil {
		t.Fatal(err)
	}
	c.action(camp.ID, "resume")
	done := c.wait(camp.ID, 30*time.Second, "completed", func(v campView) bool { return v.Status == "completed" })

	left := n - atTemplatePause
	if done.Counts["delivered"] != atTemplatePause || done.Counts["skipped"] != left ||
		!maps.Equal(done.SkipReasons, map[string]int{"template_not_approved": left}) {
		t.Fatalf("completed with counts %v and skip reasons %v; want %d delivered, %d skipped template_not_approved",
			done.Counts, done.SkipReasons, atTemplatePause, left)
	}
	msgs := c.campaignMessages(camp.ID)
	slices.SortFunc(msgs, func(a, b message) int { return int(a.ID - b.ID) })
	bySender := map[int64]int{}
	for i, m := range msgs {
		if m.Content != rendered[m.ToPhone] || m.MessageType != "template" {
			t.Fatalf("message to %s: %q (%s), want %q", m.ToPhone, m.Content, m.MessageType, rendered[m.ToPhone])
		}
		if i >= atSuspension {
			bySender[m.SenderNumberID]++
		}
	}
	if bySender[s2] != 0 || bySender[s1] != atTemplatePause-atSuspension {
		t.Fatalf("released after the suspension of sender %d, by sender: %v; want all from sender %d", s2, bySender, s1)
	}
	for _, r := range c.recipients(camp.ID, "skipped") {
		if r.ErrorCode == nil || *r.ErrorCode != templates.CodeTemplateNotApproved || r.MessageID != nil {
			t.Fatalf("skipped recipient %+v", r)
		}
	}
	first := msgs[0]
	if inbox := e.inboxFrom(first.ToPhone, map[int64]string{s1: phoneN(1), s2: phoneN(2)}[first.SenderNumberID]); !slices.Contains(inbox, rendered[first.ToPhone]) {
		t.Fatalf("the inbox of %s holds %q, want the rendered template", first.ToPhone, inbox)
	}
}

// TestCampaignSkipsAtRelease: the release's checks that skip a recipient
// and are not held elsewhere. With a service window, a plain campaign's
// recipients who never wrote to the sender are skipped
// outside_service_window and those who wrote are sent to; a template
// campaign (which the window does not hold) whose template was deleted
// after its start skips every recipient template_not_found, and
// completes.
func TestCampaignSkipsAtRelease(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true, Env: map[string]string{"NETWORK_SERVICE_WINDOW": "24h"}})
	org := e.Register(t)
	key := org.Key()
	sender := e.activeSender(org, phoneN(1))
	wrote, cold := []string{phoneN(10), phoneN(11)}, []string{phoneN(12), phoneN(13)}
	for _, p := range append(slices.Clone(wrote), cold...) {
		e.recipient(p)
	}
	for _, p := range wrote {
		e.writeTo(org, p, phoneN(1), "hello?")
	}
	c := newCampClient(t, e.Server.URL, org)
	plain := c.create(map[string]any{"name": "window", "sender_number_ids": []int64{sender}, "type": "text", "content": "Hi"})
	addPlain(t, e.Env, key, plain.ID, append(slices.Clone(wrote), cold...)...)
	c.action(plain.ID, "start")
	done := c.wait(plain.ID, 30*time.Second, "completed", func(v campView) bool { return v.Status == "completed" })
	if done.Counts["delivered"] != len(wrote) || !maps.Equal(done.SkipReasons, map[string]int{"outside_service_window": len(cold)}) {
		t.Fatalf("window campaign: counts %v, skip reasons %v", done.Counts, done.SkipReasons)
	}
	for _, r := range c.recipients(plain.ID, "skipped") {
		if !slices.Contains(cold, r.Phone) || r.ErrorCode == nil || *r.ErrorCode != "outside_service_window" {
			t.Fatalf("skipped recipient %+v", r)
		}
	}

	// The template campaign is held (scheduled, then paused) until its
	// template is deleted, so that no release runs before.
	tpl := createTemplate(t, e.Env, key, templateBody("order_update", "en_US"))
	if got := reviewed(t, e.Env, key, tpl.ID); got.Status != "approved" {
		t.Fatalf("template is %s", got.Status)
	}
	e.Clock.Set(time.Now())
	sendAt := dueIn(2 * time.Second)
	tc := c.create(map[string]any{"name": "orders", "sender_number_ids": []int64{sender}, "send_at": at(sendAt),
		"template": map[string]string{"name": "order_update", "language": "en_US"}})
	rows := make([]map[string]any, len(cold))
	for i, p := range cold {
		rows[i] = map[string]any{"phone": p, "variables": map[string]string{"1": "A-1", "2": "Ana"}}
	}
	c.addJSON(tc.ID, rows)
	if v := c.action(tc.ID, "start"); v.Status != "scheduled" {
		t.Fatalf("template campaign started %s, want scheduled", v.Status)
	}
	c.action(tc.ID, "pause")
	if r := e.Do(Request{Method: http.MethodDelete, Path: fmt.Sprintf("%s/%d", templatesPath, tpl.ID), Header: key}); r.Status != http.StatusNoContent {
		t.Fatalf("delete template = %d %s", r.Status, r.Body)
	}
	e.Clock.Set(sendAt)
	if v := c.action(tc.ID, "resume"); v.Status != "running" {
		t.Fatalf("resumed at its send_at: %s, want running", v.Status)
	}
	done = c.wait(tc.ID, 30*time.Second, "completed", func(v campView) bool { return v.Status == "completed" })
	if done.Counts["skipped"] != len(cold) || !maps.Equal(done.SkipReasons, map[string]int{templates.CodeTemplateNotFound: len(cold)}) ||
		e.campaignMessageCount(org, tc.ID) != 0 {
		t.Fatalf("campaign of a deleted template: counts %v, skip reasons %v", done.Counts, done.SkipReasons)
	}
}
