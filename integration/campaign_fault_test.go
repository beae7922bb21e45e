package integration

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/network/builtin"
)

// A campaign is durable and exact (docs/api.md, §Campaigns): it survives
// worker kills and a database restart, every recipient gets at most one
// message, and every recipient that passes the checks gets exactly one.

// Its audience.
const (
	faultRecipients = 5000
	// faultSenders numbers at faultRate messages/s each (SENDER_RATE):
	// about 25 s of release, long enough for every fault to land in the
	// middle of it, short enough for the test to end within two minutes.
	faultSenders = 4
	faultRate    = 50
)

// faultAudience says what recipient i of the audience is: most are
// reachable; 20 have no network account and 10 do not receive (both
// unreachable at release), and 20 opted out of the organization before
// the start.
func faultAudience(i int) (unreachable, notReceiving, optedOut bool) {
	return i%250 == 7, i%500 == 13, i%250 == 11
}

// TestCampaignSurvivesFaults runs a 5,000-recipient campaign over four
// sender numbers on one `platform api` and three `platform worker`
// processes of the built binary, on a private PostgreSQL cluster
// (dbtest.NewCluster), and while it releases:
//
//   - at 15% of it delivered, worker 1 is killed (SIGKILL) and replaced;
//   - at 35%, workers 2 and 3 are killed at once and replaced;
//   - at 55%, the database server crashes (pg_ctl stop -m immediate: every
//     server process gone at once, crash recovery at the next start) for
//     at least 5 s, and the replaced worker 1 is killed while it is down
//     and replaced once it is back.
//
// Then the campaign completes on its own: the network holds exactly one
// message for every eligible recipient (count = eligible, none twice) and
// none for the 50 it skips, which the campaign counts and lists with their
// reasons (opted_out, unreachable); GET /messages?campaign_id= lists one
// delivered message per eligible recipient; the processes stop cleanly.
func TestCampaignSurvivesFaults(t *testing.T) {
	t.Parallel()
	platformBinary(t) // built before the clock matters
	began := time.Now()
	pg := dbtest.NewCluster(t)
	dbURL := pg.URL("bizmsg")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("database server log, last 10 kB:\n%s", tail(pg.Log(), 10000))
		}
	})
	// An in-process API without workers sets the organization up and is
	// the test's view of the database; the processes do the rest.
	e := startMsg(t, Options{DatabaseURL: dbURL, Env: map[string]string{"DEFAULT_DAILY_LIMIT": "1000000"}})
	org := e.Register(t)
	senderIDs := make([]int64, faultSenders)
	senderPhones := make([]string, faultSenders)
	for i := range faultSenders {
		senderPhones[i] = phoneN(1 + i)
		senderIDs[i] = e.activeSender(org, senderPhones[i])
	}
	var reachable []int
	eligible := map[string]bool{}
	wantSkipped := map[string]string{} // phone → error_code
	for i := range faultRecipients {
		unreachable, notReceiving, optedOut := faultAudience(i)
		switch {
		case unreachable:
			wantSkipped[bulkPhone(i)] = "recipient_unreachable"
		case notReceiving:
			e.account(builtin.AccountSpec{Phone: bulkPhone(i), Verified: true, PhoneVerified: true})
			wantSkipped[bulkPhone(i)] = "recipient_unreachable"
		default:
			reachable = append(reachable, i)
			if optedOut {
				wantSkipped[bulkPhone(i)] = "recipient_opted_out"
			} else {
				eligible[bulkPhone(i)] = true
			}
		}
	}
	e.bulkAccounts(reachable)
	t.Logf("%d recipients: %d eligible, %d to skip", faultRecipients, len(eligible), len(wantSkipped))

	procs := startCampProcs(t, dbURL, 3, map[string]string{
		"SENDER_RATE": fmt.Sprint(faultRate), "SENDER_BURST": fmt.Sprint(faultRate),
		"DEFAULT_DAILY_LIMIT": "1000000",
	})
	c := newCampClient(t, procs.base, org)
	for phone, code := range wantSkipped {
		if code == "recipient_opted_out" {
			c.optOut(phone)
		}
	}

	// The campaign, its recipients in halves: JSON, then CSV with ten
	// phones repeated from the first half and two invalid rows.
	camp := c.create(map[string]any{"name": "fault test", "sender_number_ids": senderIDs,
		"type": "text", "content": "Our store opens at nine tomorrow."})
	half := faultRecipients / 2
	rows := make([]map[string]any, 0, half)
	for i := range half {
		rows = append(rows, map[string]any{"phone": bulkPhone(i), "client_reference": fmt.Sprintf("r%d", i)})
	}
	if a := c.addJSON(camp.ID, rows); a.Added != half || a.Duplicates != 0 || len(a.Invalid) != 0 {
		t.Fatalf("JSON half: %+v, want %d added, nothing else", a, half)
	}
	var csv strings.Builder
	csv.WriteString("phone\n")
	for i := half; i < faultRecipients; i++ {
		fmt.Fprintf(&csv, "%s\n", bulkPhone(i))
		if i%250 == 0 {
			fmt.Fprintf(&csv, "%s\n", bulkPhone(i-half)) // in the JSON half already
		}
	}
	csv.WriteString("not a phone\n+1\n")
	a := c.addCSV(camp.ID, csv.String())
	if a.Added != faultRecipients-half || a.Duplicates != 10 || len(a.Invalid) != 2 {
		t.Fatalf("CSV half: added %d, duplicates %d, invalid %+v; want %d, 10 and 2 rows", a.Added, a.Duplicates, a.Invalid, faultRecipients-half)
	}
	if st := c.action(camp.ID, "start").Status; st != "running" {
		t.Fatalf("started campaign is %s, want running", st)
	}
	started := time.Now()
	t.Logf("campaign %d started %s into the test", camp.ID, started.Sub(began).Round(time.Millisecond))

	delivered := func(share float64) {
		t.Helper()
		want := int(share * float64(len(eligible)))
		var n int
		poll(t, 90*time.Second, func() (bool, string) {
			n = e.networkFrom(senderPhones)
			return n >= want, fmt.Sprintf("waiting for %d messages on the network; %d", want, n)
		})
		t.Logf("%d messages on the network %s after the start", n, time.Since(started).Round(time.Millisecond))
	}

	// Worker 1 dies.
	delivered(0.15)
	procs.kill(0)
	procs.replace(0)
	// Workers 2 and 3 die at once.
	delivered(0.35)
	procs.kill(1)
	procs.kill(2)
	procs.replace(1)
	procs.replace(2)
	// The database server crashes; the replaced worker 1 dies while it is
	// down.
	delivered(0.55)
	pg.Stop("immediate")
	down := time.Now()
	procs.kill(0)
	poll(t, 30*time.Second, func() (bool, string) {
		r, err := SendTo(t, c.client, procs.base, Request{Method: http.MethodGet, Path: "/readyz"})
		ready := err == nil && r.Status == http.StatusOK
		return !ready && time.Since(down) >= 5*time.Second, "the api process still ready, or less than 5 s of outage"
	})
	pg.Start()
	t.Logf("database server down for %s", time.Since(down).Round(time.Millisecond))
	procs.replace(0)
	for _, w := range procs.workers {
		procs.waitWorker(w)
	}

	// The campaign completes on its own.
	done := c.wait(camp.ID, 120*time.Second, "the campaign completed with every eligible recipient delivered", func(v campView) bool {
		return v.Status == "completed" && v.Counts["delivered"] == len(eligible)
	})
	t.Logf("campaign completed %s after the start: counts %v, skip reasons %v", time.Since(started).Round(time.Millisecond), done.Counts, done.SkipReasons)

	// Exactly once, as the network saw it.
	got := e.networkByRecipient(senderPhones)
	total := 0
	for phone, n := range got {
		total += n
		switch {
		case n > 1:
			t.Errorf("%s got %d messages, want one", phone, n)
		case !eligible[phone]:
			t.Errorf("%s got a message but should have been skipped (%s)", phone, wantSkipped[phone])
		}
	}
	for phone := range eligible {
		if got[phone] == 0 {
			t.Errorf("eligible recipient %s got no message", phone)
		}
	}
	if total != len(eligible) {
		t.Errorf("the network holds %d messages of the campaign's senders for %d eligible recipients", total, len(eligible))
	}

	// The campaign's own account of it.
	want := map[string]int{"total": faultRecipients, "pending": 0, "queued": 0, "sent": 0, "delivered": len(eligible),
		"read": 0, "failed": 0, "skipped": len(wantSkipped)}
	if !maps.Equal(done.Counts, want) {
		t.Errorf("counts %v, want %v", done.Counts, want)
	}
	if want := map[string]int{"opted_out": 20, "unreachable": 30}; !maps.Equal(done.SkipReasons, want) {
		t.Errorf("skip reasons %v, want %v", done.SkipReasons, want)
	}
	skipped := c.recipients(camp.ID, "skipped")
	gotSkipped := map[string]string{}
	for _, r := range skipped {
		code := "<none>"
		if r.ErrorCode != nil {
			code = *r.ErrorCode
		}
		gotSkipped[r.Phone] = code
		if r.MessageID != nil {
			t.Errorf("skipped recipient %s has message %d", r.Phone, *r.MessageID)
		}
	}
	if !maps.Equal(gotSkipped, wantSkipped) {
		t.Errorf("skipped recipients (phone → error_code) %v, want %v", gotSkipped, wantSkipped)
	}
	msgs := c.campaignMessages(camp.ID)
	to := map[string]int{}
	bySender := map[int64]int{}
	for _, m := range msgs {
		to[m.ToPhone]++
		bySender[m.SenderNumberID]++
		if m.Status != "delivered" {
			t.Errorf("campaign message %d to %s is %s, want delivered", m.ID, m.ToPhone, m.Status)
		}
		if !slices.Contains(senderIDs, m.SenderNumberID) {
			t.Errorf("campaign message %d is from sender %d, not one of the pool %v", m.ID, m.SenderNumberID, senderIDs)
		}
	}
	if len(msgs) != len(eligible) || len(to) != len(eligible) {
		t.Errorf("GET /messages?campaign_id= lists %d messages to %d recipients, want %d each", len(msgs), len(to), len(eligible))
	}
	// The recipients are spread over the pool.
	if len(bySender) != faultSenders {
		t.Errorf("messages by sender %v: want every one of the pool's %d senders used", bySender, faultSenders)
	}
	procs.stopAll()
	t.Logf("took %s", time.Since(began).Round(time.Millisecond))
}
