package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/dbtest"
)

// Outage bounds (docs/operations.md, §Database outage).
const (
	// outageFor is how long the database server stays down at least.
	outageFor = 12 * time.Second
	// fast503 bounds a 503's answer: docs/api.md (§Status codes) promises
	// a fast answer, never after a hang.
	fast503 = 3 * time.Second
	// noHang bounds every answer, whatever its status.
	noHang = 8 * time.Second
)

// sendAttempt is one send of the outage test's traffic and its outcome.
type sendAttempt struct {
	api        string // "api-a" or "api-b"
	start, end time.Time
	status     int // 0: no answer (err)
	code       string
	requestID  string // X-Request-Id, for the process's log
	id         int64  // of a 202
	err        error
}

// outageTraffic sends text messages continuously to the api processes,
// alternating between them, and keeps every attempt.
type outageTraffic struct {
	t *testing.T
	// header authenticates the sends; body is the i-th send's body.
	header map[string]string
	body   func(i int) map[string]any
	// apis are the processes' base URLs by name.
	apis   map[string]string
	client *http.Client

	mu       sync.Mutex
	attempts []sendAttempt
}

// run sends from workers goroutines, each pausing pause between its sends,
// until ctx ends.
func (tr *outageTraffic) run(ctx context.Context, workers int, pause time.Duration) (wait func()) {
	var wg sync.WaitGroup
	var n atomic.Int64
	names := slices.Sorted(maps.Keys(tr.apis))
	for g := range workers {
		wg.Go(func() {
			for k := g; ctx.Err() == nil; k++ {
				api := names[k%len(names)]
				i := int(n.Add(1))
				a := sendAttempt{api: api, start: time.Now()}
				r, err := SendTo(tr.t, tr.client, tr.apis[api], Request{Method: http.MethodPost, Path: messagesPath,
					Header: tr.header, Body: tr.body(i)})
				a.end, a.err = time.Now(), err
				if r != nil {
					a.status = r.Status
					var body struct {
						Code string `json:"code"`
						Data struct {
							ID int64 `json:"id"`
						} `json:"data"`
					}
					_ = json.Unmarshal(r.Body, &body)
					a.code, a.id, a.requestID = body.Code, body.Data.ID, r.Header.Get("X-Request-Id")
				}
				tr.mu.Lock()
				tr.attempts = append(tr.attempts, a)
				tr.mu.Unlock()
				select {
				case <-ctx.Done():
				case <-time.After(pause):
				}
			}
		})
	}
	return wg.Wait
}

// since returns the attempts that started at or after from.
func (tr *outageTraffic) since(from time.Time) []sendAttempt {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []sendAttempt
	for _, a := range tr.attempts {
		if !a.start.Before(from) {
			out = append(out, a)
		}
	}
	return out
}

// waitFor polls the attempts since from until cond holds for them, failing
// the test with what after timeout.
func (tr *outageTraffic) waitFor(from time.Time, timeout time.Duration, what string, cond func([]sendAttempt) bool) []sendAttempt {
	tr.t.Helper()
	var as []sendAttempt
	poll(tr.t, timeout, func() (bool, string) {
		as = tr.since(from)
		return cond(as), fmt.Sprintf("waiting for %s; %s", what, summarize(as))
	})
	return as
}

// summarize counts attempts by api and outcome.
func summarize(as []sendAttempt) string {
	counts := map[string]int{}
	for _, a := range as {
		what := fmt.Sprint(a.status)
		if a.code != "" {
			what += " " + a.code
		}
		if a.err != nil {
			what = "no answer"
		}
		counts[a.api+": "+what]++
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(&b, "%s ×%d; ", k, counts[k])
	}
	return fmt.Sprintf("%d sends: %s", len(as), strings.TrimSuffix(b.String(), "; "))
}

// TestDatabaseOutage stops the database server for real in the middle of
// traffic and checks what docs/operations.md (§Database outage) says an
// operator sees: 503s answered fast, and recovery without a restart. It
// runs twice, in parallel: the server stopped with pg_ctl stop -m fast (its
// sessions ended with an error, as in a restart or a failover) and -m
// immediate (its processes gone at once, as in a crash; it starts again
// with crash recovery).
//
// A private PostgreSQL cluster (dbtest.NewCluster) serves two `platform
// api` processes (a, b) and two `platform worker` processes (1, 2), the
// binary as deployed, while two goroutines send messages to the APIs in
// turn, each every 50 ms. Once deliveries run, worker 2 is killed
// (SIGKILL) with its deliveries in flight and the server is stopped for
// at least 12 s; meanwhile api b is stopped with SIGTERM (it exits 0) and
// started again, waiting for the server. Then the server starts again, and
// worker 2 once worker 1 has shown that it works. It checks:
//
//   - during the outage every send answers 503 service_unavailable within
//     3 s, with the error body of docs/openapi.yaml (SendTo checks every
//     response against it), and no request answers after 8 s or hangs;
//     the only sends without an answer are api b's while it is away;
//   - after it, api a and worker 1, never restarted, recover on their own:
//     api a accepts sends again, and worker 1 delivers a message accepted
//     after the outage while it is the only worker; api b becomes ready
//     once its wait reaches the server; River elects a leader again;
//   - every accepted (202) message is delivered exactly once (one network
//     message with its reference), and so is any message a 503 or a lost
//     answer left stored: nothing lost, nothing doubled, nothing failed;
//   - all four processes then stop cleanly on SIGTERM, and none panicked.
//
// Each run takes about 40 s (most of it the outage and the setup); a
// failure prints every process's log and the server's.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"fast", "immediate"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			databaseOutage(t, mode)
		})
	}
}

// databaseOutage is TestDatabaseOutage with the server stopped in mode.
func databaseOutage(t *testing.T, mode string) {
	platformBinary(t) // built before the clock matters
	began := time.Now()
	pg := dbtest.NewCluster(t)
	dbURL := pg.URL("bizmsg")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("database server log, last 10 kB:\n%s", tail(pg.Log(), 10000))
		}
	})

	// The organization, its sender and the recipients, through an API
	// served in the test process on the same cluster; it stays up as a
	// third API (and the test's view of the database) through the outage.
	e := startMsg(t, Options{DatabaseURL: dbURL, Env: map[string]string{"DEFAULT_DAILY_LIMIT": "1000000"}})

	// The processes boot while the test sets up (their worker may deliver
	// the sender's OTP too: the same code).
	env := func(extra ...string) map[string]string {
		m := map[string]string{
			"DATABASE_URL": dbURL, "DB_MAX_CONNS": "4", "LOG_LEVEL": "info",
			"JWT_SECRET": strings.Repeat("j", 32), "API_KEY_PEPPER": strings.Repeat("p", 32),
			"API_RATE_LIMIT": "1000000", "API_RATE_BURST": "1000000",
			"SENDER_RATE": "1000", "SENDER_BURST": "1000",
			"SHUTDOWN_TIMEOUT": "10s", "DB_CONNECT_TIMEOUT": "60s",
			"OPS_USER": "", "OPS_PASSWORD": "", "PPROF_ADDR": "", "PLATFORM_ENV": "development",
		}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	var procs []*platformProc // every process started, for the logs
	start := func(name, command string, env map[string]string) *platformProc {
		p := startPlatform(t, name, command, env)
		procs = append(procs, p)
		return p
	}
	// logOf returns the lines of every process's log that name a request.
	logOf := func(requestID string) string {
		var b strings.Builder
		for _, p := range procs {
			for line := range strings.Lines(p.Log()) {
				if requestID != "" && strings.Contains(line, requestID) {
					fmt.Fprintf(&b, "%s: %s", p.name, line)
				}
			}
		}
		return b.String()
	}
	addrA, addrB := freeAddr(t), freeAddr(t)
	apiA := start("api-a", "api", env("HTTP_ADDR", addrA))
	apiB := start("api-b", "api", env("HTTP_ADDR", addrB))
	w1 := start("worker-1", "worker", env())
	w2 := start("worker-2", "worker", env())
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	const recipients = 4
	for i := range recipients {
		e.recipient(phoneN(10 + i))
	}
	for _, w := range []*platformProc{w1, w2} {
		if !w.WaitLog(`"msg":"workers started"`, 60*time.Second) {
			w.MustBeRunning()
			t.Fatalf("%s did not start its workers within 60s", w.name)
		}
	}
	for _, a := range []struct {
		p    *platformProc
		addr string
	}{{apiA, addrA}, {apiB, addrB}} {
		if !waitReady(t, "http://"+a.addr+"/readyz", 60*time.Second) {
			a.p.MustBeRunning()
			t.Fatalf("%s not ready within 60s", a.p.name)
		}
	}

	tr := &outageTraffic{
		t: t, header: org.Key(),
		apis: map[string]string{"api-a": "http://" + addrA, "api-b": "http://" + addrB},
		// A client of our own, bounded: a request that hangs fails the
		// test instead of holding it.
		client: &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}},
		body: func(i int) map[string]any {
			b := text(sid, phoneN(10+i%recipients), fmt.Sprintf("outage %d", i))
			b["client_reference"] = fmt.Sprintf("outage-%d", i)
			return b
		},
	}
	defer tr.client.CloseIdleConnections()
	ctx, stopTraffic := context.WithCancel(t.Context())
	defer stopTraffic()
	trafficDone := tr.run(ctx, 2, 50*time.Millisecond)

	// Deliveries run: worker 2 dies with its deliveries in flight.
	e.waitCounts(org, 30*time.Second, "20 messages delivered before the outage",
		func(c map[string]int) bool { return c["delivered"] >= 20 })
	w2.Signal(syscall.SIGKILL)
	if err := w2.WaitExit(10 * time.Second); err == nil {
		t.Fatal("worker-2 exited 0 after SIGKILL")
	}

	// The outage.
	pg.Stop(mode)
	down := time.Now()
	t.Logf("database server stopped %s into the test; %s", down.Sub(began).Round(time.Millisecond), summarize(tr.since(began)))
	// api b is stopped (SIGTERM: a clean exit) and started again; it
	// waits for the server.
	bDown := time.Now()
	apiB.Stop(15 * time.Second)
	apiB = start("api-b (restarted)", "api", env("HTTP_ADDR", addrB))
	if !apiB.WaitLog("database not reachable yet; retrying", 20*time.Second) {
		apiB.MustBeRunning()
		t.Fatal("the restarted api-b logged no retry while the server was down")
	}
	// api a answers 503 fast throughout: enough of its sends seen, and the
	// outage lasts its length.
	tr.waitFor(down, 30*time.Second, "api-a's sends during the outage", func(as []sendAttempt) bool {
		n := 0
		for _, a := range as {
			if a.api == "api-a" && a.status == http.StatusServiceUnavailable {
				n++
			}
		}
		return n >= 20 && time.Since(down) >= outageFor
	})
	if r, err := SendTo(t, tr.client, "http://"+addrA, Request{Method: http.MethodGet, Path: "/readyz"}); err != nil {
		t.Fatalf("api-a /readyz during the outage: %v", err)
	} else if r.Status != http.StatusServiceUnavailable {
		t.Fatalf("api-a /readyz during the outage = %d %s, want 503", r.Status, r.Body)
	}
	up := time.Now()
	pg.Start()
	restored := time.Now()
	t.Logf("database server down for %s (restart took %s)", up.Sub(down).Round(time.Millisecond), restored.Sub(up).Round(time.Millisecond))

	// api a recovers without a restart.
	after := tr.waitFor(restored, 15*time.Second, "api-a to accept a send after the outage", func(as []sendAttempt) bool {
		return slices.ContainsFunc(as, func(a sendAttempt) bool { return a.api == "api-a" && a.status == http.StatusAccepted })
	})
	firstA := after[slices.IndexFunc(after, func(a sendAttempt) bool { return a.api == "api-a" && a.status == http.StatusAccepted })]
	t.Logf("api-a accepted again %s after the server was back", firstA.end.Sub(restored).Round(time.Millisecond))

	// worker 1, never restarted and now alone, delivers what was accepted
	// after the outage.
	w1.MustBeRunning()
	e.waitStatus(org, firstA.id, "delivered", 30*time.Second)
	t.Logf("worker-1 delivered a message accepted after the outage %s after the server was back", time.Since(restored).Round(time.Millisecond))

	// api b, restarted during the outage, comes up once its wait for the
	// server (backing off up to 5 s between attempts) reaches it.
	if !waitReady(t, "http://"+addrB+"/readyz", 60*time.Second) {
		apiB.MustBeRunning()
		t.Fatal("the restarted api-b not ready within 60s of the server's return")
	}
	bUp := time.Now()
	t.Logf("the restarted api-b ready %s after the server was back", bUp.Sub(restored).Round(time.Millisecond))
	if !strings.Contains(apiB.Log(), `"msg":"database reachable"`) {
		t.Errorf("the restarted api-b did not log that the database became reachable")
	}
	w2 = start("worker-2 (restarted)", "worker", env())
	if !w2.WaitLog(`"msg":"workers started"`, 30*time.Second) {
		w2.MustBeRunning()
		t.Fatal("the restarted worker-2 did not start its workers within 30s")
	}
	// A while of traffic with all four processes, then the drain.
	w2Up := time.Now()
	tr.waitFor(w2Up, 30*time.Second, "20 sends accepted by each api after worker-2's restart", func(as []sendAttempt) bool {
		n := map[string]int{}
		for _, a := range as {
			if a.status == http.StatusAccepted {
				n[a.api]++
			}
		}
		return n["api-a"] >= 20 && n["api-b"] >= 20
	})
	stopTraffic()
	trafficDone()
	all := tr.since(began)
	t.Logf("traffic: %s", summarize(all))

	// Every answer: fast, and only 202 or 503 (or, from api-b while it
	// was down, none).
	var accepted []int64
	var during503 int
	var slowest503 time.Duration
	for _, a := range all {
		took := a.end.Sub(a.start)
		inOutage := !a.start.Before(down) && !a.end.After(up)
		// api-b's stop may cut a send that was on its way (a connection
		// the server closed as idle just as the request went out).
		bAway := a.api == "api-b" && !a.end.Before(bDown) && a.start.Before(bUp)
		switch {
		case a.err != nil:
			if !bAway {
				t.Errorf("%s: send at %s got no answer after %s: %v", a.api, a.start.Sub(began).Round(time.Millisecond), took, a.err)
			}
		case a.status == http.StatusAccepted:
			if inOutage {
				t.Errorf("%s: a send accepted while the database server was down (%+v)", a.api, a)
			}
			accepted = append(accepted, a.id)
		case a.status == http.StatusServiceUnavailable:
			if a.code != "service_unavailable" {
				t.Errorf("%s: 503 with code %q, want service_unavailable (the database); its log:\n%s", a.api, a.code, logOf(a.requestID))
			}
			if took > fast503 {
				t.Errorf("%s: 503 after %s, want within %s; its log:\n%s", a.api, took, fast503, logOf(a.requestID))
			}
			if inOutage {
				during503++
			}
			slowest503 = max(slowest503, took)
		default:
			t.Errorf("%s: send = %d %s, want 202 or 503; its log:\n%s", a.api, a.status, a.code, logOf(a.requestID))
		}
		if a.err == nil && took > noHang {
			t.Errorf("%s: a send answered %d after %s, want within %s; its log:\n%s", a.api, a.status, took, noHang, logOf(a.requestID))
		}
	}
	if during503 == 0 {
		t.Error("no send answered 503 during the outage")
	}
	t.Logf("%d sends answered 503 during the outage; the slowest 503 took %s", during503, slowest503.Round(time.Millisecond))

	// Exactly once: every stored message, accepted or not, delivered
	// once; every accepted one stored.
	var stored int
	e.waitCounts(org, 60*time.Second, "every stored message delivered", func(c map[string]int) bool {
		stored = 0
		for _, n := range c {
			stored += n
		}
		return c["delivered"] == stored
	})
	deliveries := e.deliveriesByMessage(org)
	if len(deliveries) != stored {
		t.Errorf("%d messages stored, %d seen with their deliveries", stored, len(deliveries))
	}
	for id, n := range deliveries {
		if n != 1 {
			t.Errorf("message %d delivered %d times, want once", id, n)
		}
	}
	for _, id := range accepted {
		if _, ok := deliveries[id]; !ok {
			t.Errorf("accepted message %d is lost: not stored", id)
		}
	}
	if got := e.networkMessages(org); got != stored {
		t.Errorf("the network holds %d messages for %d stored", got, stored)
	}
	t.Logf("%d accepted, %d stored, each delivered once", len(accepted), stored)

	// River elects a leader again (its maintenance: periodic jobs, the
	// scheduling of retries), after its own backoff.
	var leader string
	poll(t, time.Until(restored.Add(60*time.Second)), func() (bool, string) {
		err := e.App.DB.Pool.QueryRow(context.Background(),
			`SELECT leader_id FROM river.river_leader WHERE expires_at > now()`).Scan(&leader)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		return err == nil, "no River leader elected within 60s of the server's return"
	})
	t.Logf("River leader %s elected by %s after the server was back", leader, time.Since(restored).Round(time.Second))

	// All four stop cleanly: worker 1 after the outage too.
	for _, p := range []*platformProc{apiA, apiB, w1, w2} {
		p.MustBeRunning()
	}
	var wg sync.WaitGroup
	for _, p := range []*platformProc{apiA, apiB, w1, w2} {
		p.Signal(syscall.SIGTERM)
		wg.Go(func() {
			select {
			case <-p.done:
				if p.err != nil {
					t.Errorf("%s exited with %v after SIGTERM, want status 0", p.name, p.err)
				}
			case <-time.After(20 * time.Second):
				t.Errorf("%s still running 20s after SIGTERM", p.name)
			}
		})
	}
	wg.Wait()
	for _, p := range procs {
		if strings.Contains(p.Log(), "panic") {
			t.Errorf("%s logged a panic", p.name)
		}
	}
	t.Logf("took %s", time.Since(began).Round(time.Millisecond))
}

// deliveriesByMessage counts, for every message of the tenant, the network
// messages holding its reference.
func (e *msgEnv) deliveriesByMessage(org *Org) map[int64]int {
	e.t.Helper()
	rows, err := e.App.DB.Pool.Query(context.Background(), fmt.Sprintf(`SELECT m.id, count(n.id)
		FROM %s m LEFT JOIN network.messages n ON n.reference = $1 || ':' || m.id
		GROUP BY m.id`, org.Tenant.Table("messages")), org.Tenant.Schema)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]int{}
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			e.t.Fatal(err)
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}
