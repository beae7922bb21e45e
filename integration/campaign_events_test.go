package integration

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
)

// TestCampaignStartedEvent: campaign.started reaches the organization's
// webhook once per campaign, when it first runs: a start without a
// send_at ahead, a resume after its send_at, the release's RunDue at its
// send_at; never for a scheduled start, a pause or a later resume.
func TestCampaignStartedEvent(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true, Env: map[string]string{"WEBHOOK_ALLOW_PRIVATE": "true"}})
	org := e.Register(t)
	key := org.Key()
	hooks, hook := subscribeHooks(t, e.Env, key, "campaign.started")
	sender := e.activeSender(org, phoneN(1))
	later := func(name string, after time.Duration) campaign {
		c := createCampaign(t, e.Env, key, map[string]any{"name": name, "sender_number_ids": []int64{sender},
			"type": "text", "content": "Hello", "send_at": e.Clock.Now().Add(after).Format(time.RFC3339)})
		addPlain(t, e.Env, key, c.ID, phoneN(2))
		return c
	}

	// reserve_percent 100 leaves the campaign no allowance: with the
	// release running, it stays running with its recipient pending, so
	// the pause below never races its completion.
	nowBody := textCampaign("now", sender)
	nowBody["reserve_percent"] = 100
	now := createCampaign(t, e.Env, key, nowBody)
	addPlain(t, e.Env, key, now.ID, phoneN(2))
	campaignOf(t, campaignAction(e.Env, key, now.ID, "start"), http.StatusOK)
	campaignOf(t, campaignAction(e.Env, key, now.ID, "pause"), http.StatusOK)
	campaignOf(t, campaignAction(e.Env, key, now.ID, "resume"), http.StatusOK)

	held, due := later("held", time.Hour), later("due", time.Hour)
	for _, c := range []campaign{held, due} {
		if got := campaignOf(t, campaignAction(e.Env, key, c.ID, "start"), http.StatusOK); got.Status != "scheduled" {
			t.Fatalf("%s started %s", c.Name, got.Status)
		}
	}
	campaignOf(t, campaignAction(e.Env, key, held.ID, "pause"), http.StatusOK)
	ctx := context.Background()
	runDue := func(id int64) (ran bool) {
		t.Helper()
		if err := db.BeginFunc(ctx, e.App.DB.Pool, func(tx pgx.Tx) error {
			var err error
			ran, err = e.App.Campaigns.RunDue(ctx, tx, org.Tenant, id)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return ran
	}
	if runDue(due.ID) {
		t.Fatal("RunDue ran a campaign before its send_at")
	}
	e.Clock.Advance(2 * time.Hour)
	if !runDue(due.ID) || runDue(due.ID) || runDue(held.ID) {
		t.Fatal("RunDue: want the due campaign run once, the paused one left")
	}
	if got := getCampaign(t, e.Env, key, due.ID); got.Status != "running" || got.StartedAt == nil {
		t.Fatalf("after RunDue %+v", got)
	}
	campaignOf(t, campaignAction(e.Env, key, held.ID, "resume"), http.StatusOK)

	want := []string{
		fmt.Sprintf("campaign.started:%d:running", now.ID),
		fmt.Sprintf("campaign.started:%d:running", due.ID),
		fmt.Sprintf("campaign.started:%d:running", held.ID),
	}
	poll(t, 30*time.Second, func() (bool, string) {
		got := hooks.statuses()
		slices.Sort(got)
		return len(got) >= len(want), fmt.Sprintf("payloads %v", got)
	})
	got := hooks.statuses()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("payloads %v, want %v", got, want)
	}
	// Every event was written by the change that made it; the delivery log
	// holds exactly these three.
	r := e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("/api/v1/webhooks/%d/deliveries?event_type=campaign.started", hook.ID), Header: key})
	var log struct {
		Data []struct {
			EventType string `json:"event_type"`
		} `json:"data"`
	}
	r.JSON(t, &log)
	if r.Status != http.StatusOK || len(log.Data) != len(want) {
		t.Fatalf("delivery log %d %s", r.Status, r.Body)
	}
}
