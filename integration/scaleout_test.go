package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// More worker processes never mean slower delivery (docs/design.md,
// §Delivery order): one `api` and three `worker` processes of the built
// binary on one database, at the sender's default throttle or a slower one,
// deliver a backlog within the throttle's own time plus a few seconds, in
// acceptance order per conversation, each message once.

// scaleOut is one api process and three worker processes on a test's
// database, and the organization and sender they serve.
type scaleOut struct {
	*msgEnv
	org     *Org
	sid     int64
	api     string // the api process's base URL
	workers []*platformProc
}

// startScaleOut starts the processes, with the organization's sender
// throttle at rate and burst (as SENDER_RATE and SENDER_BURST would set it).
func startScaleOut(t *testing.T, rate float64, burst int) *scaleOut {
	t.Helper()
	e := startMsg(t, Options{}) // its in-process API delivers nothing: no workers
	org := e.Register(t)
	s := &scaleOut{msgEnv: e, org: org, sid: e.activeSender(org, phoneN(1))}
	if _, err := e.App.DB.Pool.Exec(context.Background(), `UPDATE central.organizations
		SET sender_rate = $2, sender_burst = $3, api_rate_limit = 10000, api_rate_burst = 10000 WHERE id = $1`,
		org.ID, rate, burst); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"DATABASE_URL": e.DatabaseURL, "DB_MAX_CONNS": "6", "LOG_LEVEL": "warn",
		"JWT_SECRET": strings.Repeat("j", 32), "API_KEY_PEPPER": strings.Repeat("p", 32),
	}
	addr := freeAddr(t)
	apiEnv := map[string]string{"HTTP_ADDR": addr}
	for k, v := range env {
		apiEnv[k] = v
	}
	startPlatform(t, "api", "api", apiEnv)
	s.api = "http://" + addr
	if !waitReady(t, s.api+"/readyz", 30*time.Second) {
		t.Fatal("the api process did not get ready")
	}
	for i := range 3 {
		s.workers = append(s.workers, startPlatform(t, fmt.Sprintf("worker %d", i+1), "worker", env))
	}
	return s
}

// sendAll accepts n text messages through the api process, one after the
// other, the i-th to recipient(i), and returns their ids in acceptance
// order and when the first was accepted.
func (s *scaleOut) sendAll(t *testing.T, n int, recipient func(int) string) ([]int64, time.Time) {
	t.Helper()
	ids := make([]int64, n)
	var began time.Time
	for i := range n {
		r, err := SendTo(t, http.DefaultClient, s.api, Request{Method: http.MethodPost, Path: messagesPath,
			Header: s.org.Key(), Body: text(s.sid, recipient(i), fmt.Sprintf("message %d", i))})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			began = time.Now()
		}
		if r.Status != http.StatusAccepted {
			t.Fatalf("send %d = %d %s", i, r.Status, r.Body)
		}
		var body struct {
			Data message `json:"data"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		ids[i] = body.Data.ID
	}
	return ids, began
}

// requireInOrder fails the test unless every recipient of phones got each
// of its messages among ids exactly once, in acceptance (id) order.
func (s *scaleOut) requireInOrder(t *testing.T, ids []int64, phones []string) {
	t.Helper()
	want := make(map[int64]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	got := 0
	for _, p := range phones {
		inbox, err := s.net.Inbox(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		var last int64
		for i, m := range inbox {
			ref, ok := strings.CutPrefix(m.Reference, s.org.Tenant.Schema+":")
			if !ok {
				t.Fatalf("%s got %+v, not a message of the organization", p, m)
			}
			id, err := strconv.ParseInt(ref, 10, 64)
			if err != nil {
				t.Fatalf("reference %q: %v", m.Reference, err)
			}
			if !want[id] {
				t.Fatalf("%s got message %d twice, or one not sent (position %d)", p, id, i+1)
			}
			want[id] = false
			if id < last {
				t.Fatalf("%s got message %d (position %d) after message %d: not in acceptance order", p, id, i+1, last)
			}
			last = id
			got++
		}
	}
	if got != len(ids) {
		t.Fatalf("the recipients got %d messages for %d accepted", got, len(ids))
	}
}

// deliveredWithin waits until all n messages of the organization are
// delivered, within the bound after began (the first acceptance), and fails
// the test with the count otherwise. It returns how long after began the
// last one arrived. On a machine so loaded that accepting the messages
// itself took most of the bound, the bound runs from the last acceptance
// instead, less the throttle's time: what is judged is the delivery, and
// a stalled delivery (the defect these tests guard against) misses either
// bound by far.
func (s *scaleOut) deliveredWithin(t *testing.T, n int, began time.Time, within time.Duration) time.Duration {
	t.Helper()
	deadline := began.Add(within)
	if late := time.Now().Add(within / 3); late.After(deadline) {
		deadline = late
	}
	counts := s.waitCounts(s.org, time.Until(deadline),
		fmt.Sprintf("all %d messages delivered within %s of the first acceptance (or %s of the last)", n, within, within/3),
		func(c map[string]int) bool { return c["delivered"] == n })
	took := time.Since(began)
	t.Logf("%d messages delivered %s after the first acceptance (%v)", n, took.Round(10*time.Millisecond), counts)
	return took
}

// 200 messages to one recipient at the default throttle (20/s, burst 40):
// 8 s of throttle, delivered within 12 s in acceptance order.
func TestConversationAcrossWorkerProcesses(t *testing.T) {
	s := startScaleOut(t, 20, 40)
	s.recipient(phoneN(10))
	const n = 200
	ids, began := s.sendAll(t, n, func(int) string { return phoneN(10) })
	s.deliveredWithin(t, n, began, 12*time.Second)
	s.requireInOrder(t, ids, []string{phoneN(10)})
	if w := s.deliveryWorkers(); w < 2 {
		t.Fatalf("%d of 3 workers ran deliveries; the test needs the conversation shared", w)
	}
}

// The same 200 spread over 20 recipients: within 11 s, each conversation in
// order.
func TestSpreadConversationsAcrossWorkerProcesses(t *testing.T) {
	s := startScaleOut(t, 20, 40)
	phones := make([]string, 20)
	for i := range phones {
		phones[i] = phoneN(100 + i)
		s.recipient(phones[i])
	}
	const n = 200
	ids, began := s.sendAll(t, n, func(i int) string { return phones[i%len(phones)] })
	s.deliveredWithin(t, n, began, 11*time.Second)
	s.requireInOrder(t, ids, phones)
}

// 300 messages to one recipient at 10/s (burst 40) while one of the three
// workers is killed with SIGKILL mid-way: all delivered within 45 s, in
// order, none twice.
func TestConversationSurvivesWorkerKill(t *testing.T) {
	s := startScaleOut(t, 10, 40)
	s.recipient(phoneN(10))
	const n = 300
	ids, began := s.sendAll(t, n, func(int) string { return phoneN(10) })
	s.waitCounts(s.org, 30*time.Second, "a third of the messages delivered",
		func(c map[string]int) bool { return c["delivered"] >= n/3 })
	s.workers[0].Signal(syscall.SIGKILL)
	_ = s.workers[0].WaitExit(5 * time.Second)
	t.Logf("killed worker 1 at %s with %v", time.Since(began).Round(10*time.Millisecond), s.statusCounts(s.org))
	s.deliveredWithin(t, n, began, 45*time.Second)
	s.requireInOrder(t, ids, []string{phoneN(10)})
	if got := s.networkMessages(s.org); got != n {
		t.Fatalf("the network holds %d messages for %d accepted: not exactly once", got, n)
	}
}
