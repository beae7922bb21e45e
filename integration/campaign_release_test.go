package integration

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"
)

// The release of campaigns (docs/api.md, §Campaigns: release, pacing,
// reserve, sticky sender, priority, completion), on the in-process service
// with its workers, the built-in network and real Postgres and River.

// campaignJobState is the state of campaign id's release job in River
// ("" when it has none).
func (e *msgEnv) campaignJobState(org *Org, id int64) string {
	e.t.Helper()
	var state string
	err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT state::text FROM river.river_job
		WHERE kind = 'campaign_release' AND (args->>'org_id')::bigint = $1 AND (args->>'campaign_id')::bigint = $2
		ORDER BY id DESC LIMIT 1`, org.ID, id).Scan(&state)
	if err != nil {
		return ""
	}
	return state
}

// logCampaignJobsOnFailure logs, when the test has failed, every release
// job River keeps of org's campaign id and the tenant's job outbox rows:
// what a stalled campaign's job was doing.
func (e *msgEnv) logCampaignJobsOnFailure(org *Org, id int64) {
	e.t.Cleanup(func() {
		if !e.t.Failed() {
			return
		}
		ctx := context.Background()
		rows, err := e.App.DB.Pool.Query(ctx, `SELECT id, state::text, attempt, scheduled_at, coalesce(errors::text, '')
			FROM river.river_job WHERE kind = 'campaign_release' AND (args->>'org_id')::bigint = $1
			AND (args->>'campaign_id')::bigint = $2 ORDER BY id`, org.ID, id)
		if err != nil {
			e.t.Logf("campaign %d's release jobs: %v", id, err)
			return
		}
		defer rows.Close()
		for rows.Next() {
			var (
				job, attempt int64
				state, errs  string
				at           time.Time
			)
			if err := rows.Scan(&job, &state, &attempt, &at, &errs); err != nil {
				e.t.Logf("campaign %d's release jobs: %v", id, err)
				return
			}
			e.t.Logf("campaign %d: release job %d %s, attempt %d, scheduled %s, errors %s", id, job, state, attempt, at.Format(time.RFC3339Nano), errs)
		}
		var outbox int
		if err := e.App.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM `+org.Tenant.Table("job_outbox")).Scan(&outbox); err != nil {
			e.t.Logf("job outbox: %v", err)
			return
		}
		e.t.Logf("%d row(s) in %s's job outbox", outbox, org.Tenant.Schema)
	})
}

// campaignMessageCount counts org's messages of campaign id, as stored.
func (e *msgEnv) campaignMessageCount(org *Org, id int64) int {
	e.t.Helper()
	var n int
	if err := e.App.DB.Pool.QueryRow(context.Background(), fmt.Sprintf(
		`SELECT count(*) FROM %s WHERE campaign_id = $1`, org.Tenant.Table("messages")), id).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// TestCampaignReleaseCompletes: a 300-recipient campaign over three
// senders completes on its own: every eligible recipient gets exactly one
// message with campaign_id (delivered), the opted-out and unreachable
// ones are skipped with their reasons and counted, a recipient a pool
// sender wrote to before keeps that sender, the events campaign.started
// and campaign.completed (with the counts) reach the webhook, and the
// messages' events carry campaign_id. Another organization's campaign to
// the same phones runs beside it and touches none of this one's data.
func TestCampaignReleaseCompletes(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true, Env: map[string]string{
		"WEBHOOK_ALLOW_PRIVATE": "true", "SENDER_RATE": "50", "SENDER_BURST": "50", "DEFAULT_DAILY_LIMIT": "100000",
	}})
	org, other := e.Register(t), e.Register(t)
	hooks, _ := subscribeHooks(t, e.Env, org.Key(), "campaign.started", "campaign.completed", "message.delivered")
	senders := []int64{e.activeSender(org, phoneN(1)), e.activeSender(org, phoneN(2)), e.activeSender(org, phoneN(3))}
	otherSender := e.activeSender(other, phoneN(4))

	const n = 300
	var audience []int
	eligible := map[string]bool{}
	wantSkipped := map[string]string{}
	for i := range n {
		switch i % 30 {
		case 5: // no account on the network
			wantSkipped[bulkPhone(i)] = "recipient_unreachable"
		case 6:
			audience = append(audience, i)
			wantSkipped[bulkPhone(i)] = "recipient_opted_out"
		default:
			audience = append(audience, i)
			eligible[bulkPhone(i)] = true
		}
	}
	e.bulkAccounts(audience)
	c := newCampClient(t, e.Server.URL, org)
	for p, code := range wantSkipped {
		if code == "recipient_opted_out" {
			c.optOut(p)
		}
	}
	// Sticky: the third sender wrote to five recipients before.
	sticky := map[string]bool{}
	for i := 100; i < 125; i += 5 {
		m := accepted(t, e.send(org, text(senders[2], bulkPhone(i), "Your order shipped.")))
		e.waitStatus(org, m.ID, "delivered", 30*time.Second)
		sticky[bulkPhone(i)] = true
	}

	rows := make([]map[string]any, n)
	for i := range n {
		rows[i] = map[string]any{"phone": bulkPhone(i), "client_reference": fmt.Sprintf("r%d", i)}
	}
	camp := c.create(map[string]any{"name": "complete", "sender_number_ids": senders, "type": "text", "content": "Sale today."})
	if a := c.addJSON(camp.ID, rows); a.Added != n {
		t.Fatalf("added %+v", a)
	}
	oc := newCampClient(t, e.Server.URL, other)
	otherCamp := oc.create(map[string]any{"name": "other", "sender_number_ids": []int64{otherSender}, "type": "text", "content": "B's news."})
	oc.addJSON(otherCamp.ID, rows[:40])

	c.action(camp.ID, "start")
	oc.action(otherCamp.ID, "start")
	done := c.wait(camp.ID, 90*time.Second, "completed", func(v campView) bool { return v.Status == "completed" })
	oc.wait(otherCamp.ID, 60*time.Second, "the other organization's campaign completed", func(v campView) bool { return v.Status == "completed" })

	want := map[string]int{"total": n, "pending": 0, "queued": 0, "sent": 0, "delivered": len(eligible), "read": 0,
		"failed": 0, "skipped": len(wantSkipped)}
	if !maps.Equal(done.Counts, want) {
		t.Errorf("counts %v, want %v", done.Counts, want)
	}
	if want := map[string]int{"opted_out": 10, "unreachable": 10}; !maps.Equal(done.SkipReasons, want) {
		t.Errorf("skip reasons %v, want %v", done.SkipReasons, want)
	}
	gotSkipped := map[string]string{}
	for _, r := range c.recipients(camp.ID, "skipped") {
		gotSkipped[r.Phone] = *r.ErrorCode
		if r.MessageID != nil {
			t.Errorf("skipped %s has message %d", r.Phone, *r.MessageID)
		}
	}
	if !maps.Equal(gotSkipped, wantSkipped) {
		t.Errorf("skipped %v, want %v", gotSkipped, wantSkipped)
	}
	// Exactly one message per eligible recipient, with campaign_id, each
	// from the recipient's listed sender, sticky ones from theirs.
	msgs := c.campaignMessages(camp.ID)
	to, bySender := map[string]int{}, map[int64]int{}
	for _, m := range msgs {
		to[m.ToPhone]++
		bySender[m.SenderNumberID]++
		if sticky[m.ToPhone] && m.SenderNumberID != senders[2] {
			t.Errorf("sticky recipient %s got sender %d, want %d (the one that wrote to it)", m.ToPhone, m.SenderNumberID, senders[2])
		}
	}
	for p := range eligible {
		if to[p] != 1 {
			t.Errorf("eligible %s got %d campaign messages, want 1", p, to[p])
		}
	}
	if len(msgs) != len(eligible) || e.campaignMessageCount(org, camp.ID) != len(eligible) {
		t.Errorf("%d campaign messages listed, want %d", len(msgs), len(eligible))
	}
	if len(bySender) != 3 {
		t.Errorf("messages by sender %v: want the pool's 3 used", bySender)
	}
	byRecipient := c.recipients(camp.ID, "delivered")
	for _, r := range byRecipient {
		if r.MessageID == nil || r.SenderNumberID == nil {
			t.Errorf("delivered recipient %s without message or sender", r.Phone)
		}
	}
	// The other organization's campaign: its own 40 (the same phones,
	// minus its skips), none in this organization's schema.
	od := oc.get(otherCamp.ID)
	if od.Counts["delivered"]+od.Counts["skipped"] != 40 || od.Counts["skipped"] != 2 {
		t.Errorf("other organization's campaign counts %v", od.Counts)
	}
	for _, x := range []struct {
		org  *Org
		want int
	}{{org, len(eligible)}, {other, 38}} {
		var n int
		if err := e.App.DB.Pool.QueryRow(context.Background(), fmt.Sprintf(
			`SELECT count(*) FROM %s WHERE campaign_id IS NOT NULL`, x.org.Tenant.Table("messages"))).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != x.want {
			t.Errorf("organization %d's schema holds %d campaign messages, want %d (its own campaign's only)", x.org.ID, n, x.want)
		}
	}

	// Events: started and completed once, with the counts; every
	// delivered message's event carries campaign_id.
	poll(t, 30*time.Second, func() (bool, string) {
		got := hooks.statuses()
		return slices.Contains(got, fmt.Sprintf("campaign.completed:%d:completed", camp.ID)), fmt.Sprintf("%d payloads", len(got))
	})
	started, completed, withCampaign := 0, 0, 0
	hooks.mu.Lock()
	for _, p := range hooks.payloads {
		data, _ := p["data"].(map[string]any)
		switch p["type"] {
		case "campaign.started":
			started++
		case "campaign.completed":
			completed++
			counts, _ := data["counts"].(map[string]any)
			if counts["delivered"] != float64(len(eligible)) || counts["skipped"] != float64(len(wantSkipped)) {
				t.Errorf("campaign.completed counts %v", counts)
			}
		case "message.delivered":
			if id, _ := data["campaign_id"].(float64); int64(id) == camp.ID {
				withCampaign++
			}
		}
	}
	hooks.mu.Unlock()
	if started != 1 || completed != 1 {
		t.Errorf("campaign.started %d, campaign.completed %d; want 1 each", started, completed)
	}
	if withCampaign == 0 {
		t.Error("no message.delivered event carried the campaign's campaign_id")
	}
	poll(t, 10*time.Second, func() (bool, string) {
		s := e.campaignJobState(org, camp.ID)
		return s == "completed", "release job " + s
	})
}

// TestCampaignReserve: with a daily limit of 20 and reserve_percent 25,
// the campaign releases 15 that day and stays running with the rest
// pending; the API can still send the remaining 5, and no more.
func TestCampaignReserve(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true, Env: map[string]string{"DEFAULT_DAILY_LIMIT": "20"}})
	org := e.Register(t)
	sender := e.activeSender(org, phoneN(1))
	rows := e.bulkAudience(30)
	c := newCampClient(t, e.Server.URL, org)
	camp := c.create(map[string]any{"name": "reserve", "sender_number_ids": []int64{sender}, "type": "text",
		"content": "Hi", "reserve_percent": 25})
	c.addJSON(camp.ID, rows)
	c.action(camp.ID, "start")
	c.wait(camp.ID, 60*time.Second, "15 released and delivered", func(v campView) bool {
		return v.Counts["delivered"] == 15
	})
	// The job now waits for the next UTC day: scheduled in River, the
	// campaign running with 15 pending.
	poll(t, 10*time.Second, func() (bool, string) {
		s := e.campaignJobState(org, camp.ID)
		return s == "scheduled", "release job " + s
	})
	v := c.get(camp.ID)
	if v.Status != "running" || v.Counts["pending"] != 15 || v.Counts["delivered"] != 15 || e.campaignMessageCount(org, camp.ID) != 15 {
		t.Fatalf("at the reserve: %s %v, want running with 15 delivered and 15 pending", v.Status, v.Counts)
	}
	e.recipient(phoneN(9))
	for i := range 5 {
		accepted(t, e.send(org, text(sender, phoneN(9), fmt.Sprintf("API %d", i))))
	}
	wantError(t, e.send(org, text(sender, phoneN(9), "one too many")), http.StatusTooManyRequests, "daily_limit_exceeded")
}

// TestCampaignPauseResumeCancel: a pause stops releases (the job ends
// within a tick and nothing is released after), a resume continues, a
// cancel skips the rest with campaign_canceled.
func TestCampaignPauseResumeCancel(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true, Env: map[string]string{"SENDER_RATE": "5", "SENDER_BURST": "5"}})
	org := e.Register(t)
	sender := e.activeSender(org, phoneN(1))
	const n = 200
	rows := e.bulkAudience(n)
	c := newCampClient(t, e.Server.URL, org)
	camp := c.create(map[string]any{"name": "pause", "sender_number_ids": []int64{sender}, "type": "text", "content": "Hi"})
	c.addJSON(camp.ID, rows)
	c.action(camp.ID, "start")
	c.wait(camp.ID, 30*time.Second, "10 released", func(v campView) bool { return v.released() >= 10 })

	paused := time.Now()
	if v := c.action(camp.ID, "pause"); v.Status != "paused" {
		t.Fatalf("paused campaign is %s", v.Status)
	}
	atPause := e.campaignMessageCount(org, camp.ID)
	poll(t, 5*time.Second, func() (bool, string) {
		s := e.campaignJobState(org, camp.ID)
		return s == "completed", "release job " + s
	})
	t.Logf("release job ended %s after the pause", time.Since(paused).Round(time.Millisecond))
	// Every queued message of the pause is delivered; none was added.
	c.wait(camp.ID, 30*time.Second, "nothing queued", func(v campView) bool { return v.Counts["queued"] == 0 })
	if got := e.campaignMessageCount(org, camp.ID); got != atPause {
		t.Fatalf("%d campaign messages after the pause, %d at it", got, atPause)
	}
	if v := c.get(camp.ID); v.Status != "paused" || v.Counts["pending"] != n-atPause {
		t.Fatalf("paused campaign %s %v", v.Status, v.Counts)
	}

	if v := c.action(camp.ID, "resume"); v.Status != "running" {
		t.Fatalf("resumed campaign is %s", v.Status)
	}
	c.wait(camp.ID, 30*time.Second, "10 more released", func(v campView) bool { return v.released() >= atPause+10 })

	v := c.action(camp.ID, "cancel")
	if v.Status != "canceled" || v.Counts["pending"] != 0 {
		t.Fatalf("canceled campaign %s %v", v.Status, v.Counts)
	}
	atCancel := e.campaignMessageCount(org, camp.ID)
	poll(t, 5*time.Second, func() (bool, string) {
		s := e.campaignJobState(org, camp.ID)
		return s == "completed", "release job " + s
	})
	if got := e.campaignMessageCount(org, camp.ID); got != atCancel {
		t.Fatalf("%d campaign messages after the cancel, %d at it", got, atCancel)
	}
	v = c.get(camp.ID)
	if v.SkipReasons["canceled"] != n-atCancel || v.Counts["skipped"] != n-atCancel {
		t.Fatalf("after cancel: counts %v, skip reasons %v; want %d skipped (canceled)", v.Counts, v.SkipReasons, n-atCancel)
	}
}

// TestCampaignResumeWhileRunning: a pause and a resume made at once,
// while the run's release job is still under way, queue a job of a new
// release generation; the older job ends at its next tick (it does not
// release beside the new one) and the new one carries the campaign to
// its end, every recipient released once.
func TestCampaignResumeWhileRunning(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true, Env: map[string]string{"SENDER_RATE": "10", "SENDER_BURST": "10"}})
	org := e.Register(t)
	sender := e.activeSender(org, phoneN(1))
	const n = 120
	c := newCampClient(t, e.Server.URL, org)
	camp := c.create(map[string]any{"name": "quick", "sender_number_ids": []int64{sender}, "type": "text", "content": "Hi"})
	c.addJSON(camp.ID, e.bulkAudience(n))
	e.logCampaignJobsOnFailure(org, camp.ID)
	c.action(camp.ID, "start")
	c.wait(camp.ID, 30*time.Second, "10 released", func(v campView) bool { return v.released() >= 10 })
	c.action(camp.ID, "pause")
	if v := c.action(camp.ID, "resume"); v.Status != "running" {
		t.Fatalf("resumed campaign is %s", v.Status)
	}
	// The first generation's job ends while the campaign runs on.
	poll(t, 10*time.Second, func() (bool, string) {
		states := e.campaignJobsByGen(org, camp.ID)
		return states[1] == "completed" && states[2] != "" && states[2] != "completed",
			fmt.Sprintf("release jobs by generation %v", states)
	})
	done := c.wait(camp.ID, 60*time.Second, "completed", func(v campView) bool { return v.Status == "completed" })
	if done.Counts["delivered"] != n {
		t.Fatalf("completed with counts %v, want %d delivered", done.Counts, n)
	}
	if got := e.campaignMessageCount(org, camp.ID); got != n {
		t.Fatalf("%d campaign messages for %d recipients", got, n)
	}
	if states := e.campaignJobsByGen(org, camp.ID); len(states) != 2 {
		t.Fatalf("release jobs by generation %v, want one job for each of the two", states)
	}
}

// campaignJobsByGen returns the state of each release job River keeps of
// org's campaign id, by the release generation it carries.
func (e *msgEnv) campaignJobsByGen(org *Org, id int64) map[int64]string {
	e.t.Helper()
	rows, err := e.App.DB.Pool.Query(context.Background(), `SELECT coalesce((args->>'gen')::bigint, 0), state::text
		FROM river.river_job WHERE kind = 'campaign_release' AND (args->>'org_id')::bigint = $1
		AND (args->>'campaign_id')::bigint = $2`, org.ID, id)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]string{}
	for rows.Next() {
		var (
			gen   int64
			state string
		)
		if err := rows.Scan(&gen, &state); err != nil {
			e.t.Fatal(err)
		}
		if out[gen] != "" {
			e.t.Fatalf("two release jobs of generation %d", gen)
		}
		out[gen] = state
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// TestCampaignPriority: an API send through a sender busy with a campaign
// is delivered ahead of the campaign messages released after it: they
// wait behind it (River priority) and the pacing keeps at most the
// throttle's second of campaign messages queued ahead of it.
func TestCampaignPriority(t *testing.T) {
	t.Parallel()
	const rate = 10
	e := startMsg(t, Options{Workers: true, Env: map[string]string{
		"SENDER_RATE": fmt.Sprint(rate), "SENDER_BURST": fmt.Sprint(rate),
	}})
	org := e.Register(t)
	sender := e.activeSender(org, phoneN(1))
	const n = 120
	rows := e.bulkAudience(n)
	e.recipient(phoneN(9))
	c := newCampClient(t, e.Server.URL, org)
	camp := c.create(map[string]any{"name": "busy", "sender_number_ids": []int64{sender}, "type": "text", "content": "Hi"})
	c.addJSON(camp.ID, rows)
	c.action(camp.ID, "start")
	c.wait(camp.ID, 30*time.Second, "30 released", func(v campView) bool { return v.released() >= 30 })

	api := accepted(t, e.send(org, text(sender, phoneN(9), "Your code is 1234")))
	inFlight := c.get(camp.ID).Counts["queued"]
	c.wait(camp.ID, 60*time.Second, "completed", func(v campView) bool { return v.Status == "completed" })

	msgs := c.campaignMessages(camp.ID)
	ids := []int64{api.ID}
	for _, m := range msgs {
		ids = append(ids, m.ID)
	}
	times := e.networkTimes(org, ids)
	apiAt, ok := times[api.ID]
	if !ok {
		t.Fatal("the API send is not on the network")
	}
	after, ahead := 0, 0
	for _, m := range msgs {
		if m.ID < api.ID {
			continue
		}
		after++
		if times[m.ID].Before(apiAt) {
			ahead++
		}
	}
	t.Logf("campaign messages released after the API send: %d, delivered ahead of it: %d (%d queued at its acceptance)", after, ahead, inFlight)
	if after < 50 || ahead > after/10 {
		t.Errorf("of %d campaign messages released after the API send, %d were delivered ahead of it; want at most %d", after, ahead, after/10)
	}
}
