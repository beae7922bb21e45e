package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// faultStream is one organization's steady stream of sends in
// TestCitusWorkerDown: each send carries an Idempotency-Key, and a 503 is
// retried by the client with the same key after 100 ms.
type faultStream struct {
	o          *citusOrg
	recipients []string
	mu         sync.Mutex
	// ids are the accepted messages; started is when each accepted send
	// started (after the stream's start), tries how many attempts it took.
	ids     []int64
	started []time.Duration
	tries   []int
	// unavailable is when each 503 came; lost counts the attempts that got
	// no answer; bad is every other answer that is neither 202 nor the
	// contract's 503.
	unavailable []time.Duration
	lost        int
	bad         []string
}

// send makes send i of the stream against the api at base, retrying the
// contract's 503, or an attempt that got no answer, with the same
// Idempotency-Key every 100 ms (at once once stop is closed), for at most
// 3 minutes.
func (f *faultStream) send(t *testing.T, base string, i int, start time.Time, stop <-chan struct{}) {
	at := time.Since(start)
	header := f.o.org.Key()
	header["Idempotency-Key"] = fmt.Sprintf("fault-%d-%d", f.o.org.ID, i)
	body := text(f.o.sid, f.recipients[i%len(f.recipients)], fmt.Sprintf("message %d of %s", i, f.o.org.Name))
	for try := 1; ; try++ {
		resp, err := SendTo(t, http.DefaultClient, base, Request{Method: http.MethodPost, Path: messagesPath, Header: header, Body: body})
		f.mu.Lock()
		switch {
		case err != nil || resp.Status == http.StatusServiceUnavailable && strings.Contains(string(resp.Body), `"code":"service_unavailable"`):
			// A 503, or no answer (the connection broke: on this busy
			// machine a send can outlast the server's write timeout):
			// the client retries with its key.
			if err != nil {
				f.lost++
			} else {
				f.unavailable = append(f.unavailable, time.Since(start))
			}
			f.mu.Unlock()
			if time.Since(start)-at > 3*time.Minute {
				f.mu.Lock()
				f.bad = append(f.bad, fmt.Sprintf("send %d: still failing after 3 minutes: %v", i, err))
				f.mu.Unlock()
				return
			}
			select {
			case <-time.After(100 * time.Millisecond):
			case <-stop:
				// The test ends: one more attempt, then the outcome.
			}
			continue
		case resp.Status != http.StatusAccepted:
			f.bad = append(f.bad, fmt.Sprintf("send %d: %d %s", i, resp.Status, resp.Body))
		default:
			var m struct {
				Data message `json:"data"`
			}
			if err := json.Unmarshal(resp.Body, &m); err != nil || m.Data.ID == 0 {
				f.bad = append(f.bad, fmt.Sprintf("send %d: %v: %s", i, err, resp.Body))
				break
			}
			f.ids = append(f.ids, m.Data.ID)
			f.started = append(f.started, at)
			f.tries = append(f.tries, try)
		}
		f.mu.Unlock()
		return
	}
}

// since counts the sends that started at or after from and were accepted
// at their first attempt, and all accepted sends.
func (f *faultStream) since(from time.Duration) (firstTry, accepted int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, at := range f.started {
		if at >= from && f.tries[i] == 1 {
			firstTry++
		}
	}
	return firstTry, len(f.ids)
}

// failed returns the answers that were neither 202 nor the contract's 503.
func (f *faultStream) failed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.bad)
}

// unavailableSince counts the 503s that came at or after from.
func (f *faultStream) unavailableSince(from time.Duration) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, at := range f.unavailable {
		if at >= from {
			n++
		}
	}
	return n
}

// docs/scaling.md, §A worker node down: two organizations on different
// worker nodes send 10 messages a second each through an api process and
// a worker process; one worker node is stopped as a crash stops it
// (citus-cluster kill: pg_ctl stop -m immediate) and started again. While
// it is down its organization's sends are answered the contract's 503,
// never a 500, and the other organization's, whose schema is on the
// healthy node, are not: each of them is accepted at its first attempt
// (every statement of a send runs on the tenant's node alone). Once the
// node is back both organizations are accepted again at the first
// attempt. Every accepted message is stored once (the client retries a
// 503, or an attempt without an answer, with its Idempotency-Key) and
// delivered exactly once (the network holds each reference once), its
// message.delivered heard under one webhook-id (at least once: a retried
// attempt repeats it), and every job outbox ends empty.
func TestCitusWorkerDown(t *testing.T) {
	t.Parallel()
	cluster := startCitusCluster(t)
	url := cluster.createdb(t)
	e := startMsg(t, Options{DatabaseURL: url, Env: map[string]string{"WEBHOOK_ALLOW_PRIVATE": "true"}})
	ctx := t.Context()

	// Two organizations whose schemas are on different workers.
	byNode := map[string]*citusOrg{}
	for i := 1; len(byNode) < 2; i++ {
		if i > 6 {
			t.Fatalf("6 organizations registered, their schemas on %d worker(s): want both", len(byNode))
		}
		org := e.Register(t)
		placed, err := e.App.Migrator.Placements(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range placed {
			if p.Org == org.ID && p.Distributed && byNode[p.Node] == nil {
				byNode[p.Node] = &citusOrg{org: org, phone: phoneN(i)}
			}
		}
	}
	var recipients []string
	for i := range 10 {
		recipients = append(recipients, phoneN(100+i))
		e.recipient(recipients[i])
	}
	// The victim is the organization on worker2 (by its port file).
	port, err := os.ReadFile(filepath.Join(cluster.dir, "worker2", "port"))
	if err != nil {
		t.Fatal(err)
	}
	victimNode := "127.0.0.1:" + strings.TrimSpace(string(port))
	var healthy, victim *faultStream
	for node, o := range byNode {
		o.sid, o.rcv = citusStreamOrg(t, e, o.org, o.phone)
		f := &faultStream{o: o, recipients: recipients}
		if node == victimNode {
			victim = f
		} else {
			healthy = f
		}
	}
	if victim == nil || healthy == nil {
		t.Fatalf("organizations on %v, want one on worker2 (%s)", byNode, victimNode)
	}
	api, _, apiProc := startCitusProcesses(t, url)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, l := range strings.Split(apiProc.Log(), "\n") {
			if strings.Contains(l, `"status":500`) && strings.Contains(l, "request failed") {
				t.Logf("api: %s", l)
			}
		}
	})
	script := func(args ...string) {
		t.Helper()
		if out, err := exec.CommandContext(ctx, cluster.script, append(args, cluster.dir)...).CombinedOutput(); err != nil {
			t.Fatalf("citus-cluster %v: %v\n%s", args, err, out)
		}
	}

	// 10 sends a second for each organization until stop.
	const rate = 10
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	streamDone := make(chan struct{})
	go func() {
		defer close(streamDone)
		tick := time.NewTicker(time.Second / rate)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for _, f := range []*faultStream{healthy, victim} {
				wg.Go(func() { f.send(t, api, i, start, stop) })
			}
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-streamDone
		wg.Wait()
	}()
	poll(t, 2*time.Minute, func() (bool, string) {
		h, _ := healthy.since(0)
		v, _ := victim.since(0)
		return h >= 10 && v >= 10, fmt.Sprintf("before the stop: %d and %d sends accepted, want 10 each", h, v)
	})

	// The victim's worker goes down: its organization's sends are answered
	// 503 (each retried by the client) until it is back.
	killedAt := time.Since(start)
	script("kill", "worker2")
	// It stays down until the victim has met it 30 times and the healthy
	// organization has had 10 sends accepted since the stop (state, not a
	// time: a loaded machine sends fewer a second).
	poll(t, 2*time.Minute, func() (bool, string) {
		n := victim.unavailableSince(killedAt)
		_, h := healthyDuring(healthy, killedAt, time.Since(start))
		return n >= 30 && h >= 10, fmt.Sprintf("worker2 down: the victim's 503s: %d, want 30; the healthy organization's "+
			"sends accepted: %d, want 10; other answers: %q", n, h, victim.failed())
	})
	_, victimBefore := victim.since(0)
	restartedAt := time.Since(start)
	downFor := restartedAt - killedAt
	script("start")
	poll(t, 2*time.Minute, func() (bool, string) {
		v, _ := victim.since(restartedAt)
		h, _ := healthy.since(restartedAt)
		return v >= 10 && h >= 10, fmt.Sprintf("worker2 back: sends accepted at their first attempt: the victim's %d, "+
			"the healthy organization's %d, want 10 each", v, h)
	})
	close(stop)
	<-streamDone
	wg.Wait()

	for _, f := range []*faultStream{healthy, victim} {
		if len(f.bad) > 0 {
			t.Fatalf("%s: %d sends answered neither 202 nor 503 service_unavailable: %q", f.o.org.Name, len(f.bad), f.bad)
		}
	}
	// The healthy organization's schema is on the node that stayed up:
	// none of its sends was answered 503, and each one made while worker2
	// was down was accepted at its first attempt.
	if h503 := healthy.unavailable; len(h503) > 0 {
		t.Fatalf("the healthy organization's sends were answered 503 %d times, from %s to %s after the stop: want none",
			len(h503), (slices.Min(h503) - killedAt).Round(time.Millisecond), (slices.Max(h503) - killedAt).Round(time.Millisecond))
	}
	if first, all := healthyDuring(healthy, killedAt, restartedAt); first != all || first < 10 {
		t.Fatalf("the healthy organization's sends made while worker2 was down: %d accepted, %d of them at the first attempt; "+
			"want every one, and 10 at least", all, first)
	}
	v503 := victim.unavailable
	t.Logf("worker2 down for %s; the victim's 503s: %d, from %s to %s after the stop (%d messages accepted before it); "+
		"the healthy organization: %d accepted in all, %d of them at the first attempt while worker2 was down; "+
		"attempts without an answer (retried): %d and %d",
		downFor.Round(time.Millisecond), len(v503), (slices.Min(v503) - killedAt).Round(time.Millisecond),
		(slices.Max(v503) - killedAt).Round(time.Millisecond), victimBefore, len(healthy.ids), firstTries(healthy, killedAt, restartedAt),
		victim.lost, healthy.lost)

	// Exactly once, for both: each accepted send stored once, delivered,
	// held once by the network, its message.delivered heard once.
	for _, f := range []*faultStream{healthy, victim} {
		org, total := f.o.org, len(f.ids)
		if distinct := len(slices.Compact(slices.Sorted(slices.Values(f.ids)))); distinct != total {
			t.Fatalf("%s: %d accepted sends answered %d message ids", org.Name, total, distinct)
		}
		e.waitCounts(org, 3*time.Minute, fmt.Sprintf("%s: all %d messages delivered", org.Name, total),
			func(c map[string]int) bool { return c["delivered"] == total })
		if c := e.statusCounts(org); len(c) != 1 {
			t.Fatalf("%s: messages by status %v, want %d delivered only", org.Name, c, total)
		}
		if got := e.networkMessages(org); got != total {
			t.Fatalf("%s: the network holds %d messages for %d accepted", org.Name, got, total)
		}
		var refs int
		if err := e.App.DB.Pool.QueryRow(ctx, `SELECT count(DISTINCT reference) FROM network.messages WHERE reference LIKE $1 || ':%'`,
			org.Tenant.Schema).Scan(&refs); err != nil || refs != total {
			t.Fatalf("%s: %d distinct references on the network (%v), want %d", org.Name, refs, err, total)
		}
		e.requireNetworkIDs(org)
		f.o.rcv.until(t, total, fmt.Sprintf("%s: %d message.delivered", org.Name, total))
		poll(t, 30*time.Second, func() (bool, string) {
			var left int
			if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM `+org.Tenant.Table("job_outbox")).Scan(&left); err != nil {
				t.Fatal(err)
			}
			return left == 0, fmt.Sprintf("%s: %d job outbox rows left: want every job moved into River", org.Name, left)
		})
	}
	// Webhooks are at least once: an attempt whose success could not be
	// recorded (its statement met the stopped node) is made again, under
	// the event's webhook-id. Each delivery succeeded, and each was heard
	// under one webhook-id of its own.
	for _, f := range []*faultStream{healthy, victim} {
		org := f.o.org
		var deliveries, pending int
		poll(t, time.Minute, func() (bool, string) {
			if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE state <> 'succeeded') FROM `+
				org.Tenant.Table("webhook_deliveries")).Scan(&deliveries, &pending); err != nil {
				t.Fatal(err)
			}
			return pending == 0, fmt.Sprintf("%s: %d of %d webhook deliveries not succeeded", org.Name, pending, deliveries)
		})
		got := f.o.rcv.hooks()
		ids := map[string]bool{}
		for _, h := range got {
			ids[h.header.Get("webhook-id")] = true
		}
		if deliveries != len(f.ids) || len(ids) != deliveries {
			t.Fatalf("%s: %d webhook deliveries, %d webhook-ids heard, for %d messages delivered: want one each", org.Name, deliveries, len(ids), len(f.ids))
		}
		t.Logf("%s: %d message.delivered heard in %d requests", org.Name, deliveries, len(got))
	}
}

// healthyDuring counts f's sends that started while the node was down
// (from killed to restarted) and were accepted: at their first attempt
// (first), and in all.
func healthyDuring(f *faultStream, killed, restarted time.Duration) (first, all int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, at := range f.started {
		if at >= killed && at < restarted {
			all++
			if f.tries[i] == 1 {
				first++
			}
		}
	}
	return first, all
}

// firstTries is healthyDuring's first.
func firstTries(f *faultStream, killed, restarted time.Duration) int {
	first, _ := healthyDuring(f, killed, restarted)
	return first
}
