package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/queue"
)

// Usage: GET /api/v1/usage (usage.read) and the dashboard's
// GET /api/v1/central/usage.

type usageReport struct {
	Period struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"period"`
	Totals counts `json:"totals"`
	Daily  []struct {
		Date string `json:"date"`
		counts
	} `json:"daily"`
	PerSender []struct {
		SenderNumberID int64  `json:"sender_number_id"`
		Phone          string `json:"phone"`
		DailyLimit     int    `json:"daily_limit"`
		UsedToday      int    `json:"used_today"`
		RemainingToday int    `json:"remaining_today"`
		ResetsAt       string `json:"resets_at"`
		Scheduled      int    `json:"scheduled"`
	} `json:"per_sender"`
	Limits struct {
		DefaultDailyLimit int     `json:"default_daily_limit"`
		SenderRate        float64 `json:"sender_rate"`
		SenderBurst       int     `json:"sender_burst"`
		APIRateLimit      float64 `json:"api_rate_limit"`
		APIRateBurst      int     `json:"api_rate_burst"`
	} `json:"limits"`
}

type counts struct {
	Queued    int `json:"queued"`
	Sent      int `json:"sent"`
	Delivered int `json:"delivered"`
	Read      int `json:"read"`
	Failed    int `json:"failed"`
	Total     int `json:"total"`
	Received  int `json:"received"`
	// Scheduled is in totals only: the messages waiting for their release.
	Scheduled int `json:"scheduled"`
}

func (e *msgEnv) usage(path string, header map[string]string) usageReport {
	e.t.Helper()
	r := e.Do(Request{Method: http.MethodGet, Path: path, Header: header})
	if r.Status != http.StatusOK {
		e.t.Fatalf("usage %s = %d %s", path, r.Status, r.Body)
	}
	var body struct {
		Data usageReport `json:"data"`
	}
	r.JSON(e.t, &body)
	return body.Data
}

// deliverNow works a message's delivery job in the test, as the worker would.
func (e *msgEnv) deliverNow(org *Org, messageID int64) {
	e.t.Helper()
	e.waitMoved(org)
	var jobID int64
	if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT id FROM river.river_job
		WHERE kind = 'message_delivery' AND args->>'schema' = $1 AND (args->>'message_id')::bigint = $2`,
		org.Tenant.Schema, messageID).Scan(&jobID); err != nil {
		e.t.Fatalf("delivery job of message %d: %v", messageID, err)
	}
	d, err := e.App.Delivery.DeliverMessage(context.Background(),
		queue.DeliverArgs{TenantRef: queue.TenantRef{OrgID: org.ID, Schema: org.Tenant.Schema}, MessageID: messageID},
		queue.DeliveryAttempt{JobID: jobID, Attempt: 1, MaxAttempts: 25})
	if err != nil || d != 0 {
		e.t.Fatalf("deliver message %d: %v, snooze %s", messageID, err, d)
	}
}

// Counts by day and status, each sender's allowance today, the limits.
func TestUsageReport(t *testing.T) {
	t.Parallel()
	day1 := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	e := startMsg(t, Options{Start: day1, Env: map[string]string{"API_RATE_LIMIT": "30", "API_RATE_BURST": "60"}})
	org := e.Register(t)
	s1 := e.activeSender(org, phoneN(1))
	s2 := e.activeSender(org, phoneN(2))
	limit := 5
	e.setLimit(org, s2, &limit)
	e.recipient(phoneN(10))
	e.recipient(phoneN(11))

	// Day 1: three messages of s1, two delivered (the built-in network
	// delivers as it takes them) and one of them read, one refused by the
	// network. The read receipt moves the message from delivered to read,
	// and a late delivered receipt moves nothing.
	m1 := accepted(t, e.send(org, text(s1, phoneN(10), "a")))
	m2 := accepted(t, e.send(org, text(s1, phoneN(10), "b")))
	m3 := accepted(t, e.send(org, text(s1, phoneN(11), "c")))
	e.deliverNow(org, m1.ID)
	e.deliverNow(org, m2.ID)
	if err := e.net.Block(context.Background(), phoneN(11), phoneN(1)); err != nil {
		t.Fatal(err)
	}
	e.deliverNow(org, m3.ID)
	ref := org.Tenant.Schema + ":" + strconv.FormatInt(m1.ID, 10)
	for _, r := range []messages.Receipt{{Reference: ref, Status: messages.StatusRead}, {Reference: ref, Status: messages.StatusDelivered}} {
		if _, err := e.App.Messages.ApplyReceipt(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}

	// Day 3: two messages of s2, still queued, and one of s1, delivered (so
	// that s1's day has a delivery counter beside its acceptance counter,
	// and used_today must read the acceptance one alone).
	e.Clock.Set(day1.AddDate(0, 0, 2).Add(5 * time.Hour))
	accepted(t, e.send(org, text(s2, phoneN(10), "d")))
	accepted(t, e.send(org, text(s2, phoneN(10), "e")))
	e.deliverNow(org, accepted(t, e.send(org, text(s1, phoneN(10), "f"))).ID)
	// And an answer to s1, which counts as received and in no total.
	if got, err := e.App.Messages.Receive(context.Background(), messages.Inbound{ID: "usage-in-1", FromPhone: phoneN(10),
		ToPhone: phoneN(1), Media: network.Media{Type: "text", Content: "thanks"}}); err != nil || got != messages.ReceiptApplied {
		t.Fatalf("receive: %s %v", got, err)
	}
	e.relogin(org) // the fake clock outlived the access token

	rep := e.usage(usagePath, org.Key())
	if rep.Period.From != "2026-10-24" || rep.Period.To != "2026-11-22" || len(rep.Daily) != 30 {
		t.Fatalf("default period %+v with %d days", rep.Period, len(rep.Daily))
	}
	want := counts{Queued: 2, Delivered: 2, Read: 1, Failed: 1, Total: 6, Received: 1}
	if rep.Totals != want {
		t.Fatalf("totals %+v, want %+v", rep.Totals, want)
	}
	byDate := map[string]counts{}
	for _, d := range rep.Daily {
		byDate[d.Date] = d.counts
	}
	if byDate["2026-11-20"] != (counts{Delivered: 1, Read: 1, Failed: 1, Total: 3}) ||
		byDate["2026-11-21"] != (counts{}) ||
		byDate["2026-11-22"] != (counts{Queued: 2, Delivered: 1, Total: 3, Received: 1}) {
		t.Fatalf("daily %+v", rep.Daily)
	}
	if rep.Daily[0].Date != "2026-10-24" || rep.Daily[29].Date != "2026-11-22" {
		t.Fatalf("daily runs %s..%s", rep.Daily[0].Date, rep.Daily[29].Date)
	}
	if len(rep.PerSender) != 2 {
		t.Fatalf("per_sender %+v", rep.PerSender)
	}
	for _, ps := range rep.PerSender {
		switch ps.SenderNumberID {
		case s1:
			if ps.Phone != phoneN(1) || ps.DailyLimit != 1000 || ps.UsedToday != 1 || ps.RemainingToday != 999 {
				t.Fatalf("s1 %+v", ps)
			}
		case s2:
			if ps.DailyLimit != 5 || ps.UsedToday != 2 || ps.RemainingToday != 3 {
				t.Fatalf("s2 %+v", ps)
			}
		}
		if ps.ResetsAt != "2026-11-23T00:00:00Z" {
			t.Fatalf("resets_at %s", ps.ResetsAt)
		}
	}
	l := rep.Limits
	if l.DefaultDailyLimit != 1000 || l.SenderRate != 20 || l.SenderBurst != 40 || l.APIRateLimit != 30 || l.APIRateBurst != 60 {
		t.Fatalf("limits %+v", l)
	}

	// A chosen period, and the organization's own throttle.
	if _, err := e.App.DB.Pool.Exec(context.Background(),
		`UPDATE central.organizations SET sender_rate = 2.5, sender_burst = 3 WHERE id = $1`, org.ID); err != nil {
		t.Fatal(err)
	}
	rep = e.usage(usagePath+"?from=2026-11-20&to=2026-11-21", org.Key())
	if len(rep.Daily) != 2 || rep.Totals != (counts{Delivered: 1, Read: 1, Failed: 1, Total: 3}) || rep.Limits.SenderRate != 2.5 || rep.Limits.SenderBurst != 3 {
		t.Fatalf("chosen period: %+v", rep)
	}
	if rep = e.usage(usagePath+"?from=2026-11-22", org.Key()); len(rep.Daily) != 1 || rep.Totals.Total != 3 {
		t.Fatalf("from today: %+v", rep)
	}

	// The dashboard shows the same report.
	central := e.usage("/api/v1/central/usage?from=2026-11-20&to=2026-11-21", org.Bearer())
	a, _ := json.Marshal(central)
	b, _ := json.Marshal(rep)
	if central.Totals != (counts{Delivered: 1, Read: 1, Failed: 1, Total: 3}) {
		t.Fatalf("dashboard usage %s vs %s", a, b)
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Start: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)})
	org := e.Register(t)
	for _, tt := range []struct{ q, field string }{
		{"?from=yesterday", "from"},
		{"?to=2026-13-01", "to"},
		{"?from=2026-11-22&to=2026-11-21", "from"},
		{"?from=2024-01-01&to=2026-11-22", "from"},
	} {
		wantFields(t, e.Do(Request{Method: http.MethodGet, Path: usagePath + tt.q, Header: org.Key()}), tt.field)
	}
	noScope := KeyHeader(e.APIKey(t, org, "messages.send", "messages.read", "contacts.lookup"))
	wantError(t, e.Do(Request{Method: http.MethodGet, Path: usagePath, Header: noScope}), http.StatusForbidden, "insufficient_scope")
	only := KeyHeader(e.APIKey(t, org, "usage.read"))
	rep := e.usage(usagePath, only)
	if rep.Totals != (counts{}) || len(rep.PerSender) != 0 || len(rep.Daily) != 30 {
		t.Fatalf("empty organization's usage %+v", rep)
	}
	if fmt.Sprint(rep.Period) != "{2026-10-24 2026-11-22}" {
		t.Fatalf("period %+v", rep.Period)
	}
}
