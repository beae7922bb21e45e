package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/app"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/queue"
)

// Delivery tests: the daily limit under concurrency, the per-sender
// throttle, crash recovery and network outages, with real River workers.

// statusCounts counts the tenant's messages by status.
func (e *msgEnv) statusCounts(org *Org) map[string]int {
	e.t.Helper()
	rows, err := e.App.DB.Pool.Query(context.Background(),
		fmt.Sprintf(`SELECT status, count(*) FROM %s GROUP BY status`, org.Tenant.Table("messages")))
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			e.t.Fatal(err)
		}
		out[st] = n
	}
	return out
}

// waitCounts polls until cond holds for the tenant's status counts.
func (e *msgEnv) waitCounts(org *Org, timeout time.Duration, what string, cond func(map[string]int) bool) map[string]int {
	e.t.Helper()
	var c map[string]int
	poll(e.t, timeout, func() (bool, string) {
		c = e.statusCounts(org)
		return cond(c), fmt.Sprintf("waiting for %s; counts %v", what, c)
	})
	return c
}

// 50 parallel sends against a daily limit of 10: exactly 10 accepted, 40
// refused with 429 and Retry-After to the next UTC midnight, exactly 10
// delivered.
func TestDailyLimitUnderConcurrency(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 22, 23, 58, 30, 0, time.UTC)
	e := startMsg(t, Options{Workers: true, Start: start})
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	limit := 10
	e.setLimit(org, sid, &limit)
	for i := range 5 {
		e.recipient(phoneN(100 + i))
	}

	const n = 50
	results := make([]*Response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, err := e.Env.Send(Request{Method: http.MethodPost, Path: messagesPath, Header: org.Key(),
				Body: text(sid, phoneN(100+i%5), fmt.Sprintf("message %d", i))})
			if err != nil {
				t.Error(err)
				return
			}
			results[i] = r
		})
	}
	wg.Wait()
	var ok, limited int
	for _, r := range results {
		switch r.Status {
		case http.StatusAccepted:
			ok++
		case http.StatusTooManyRequests:
			limited++
			m := wantError(t, r, http.StatusTooManyRequests, "daily_limit_exceeded")
			if got := r.Header.Get("Retry-After"); got != "90" {
				t.Errorf("Retry-After %q, want 90 (seconds to midnight UTC)", got)
			}
			if m["daily_limit"] != float64(10) || m["resets_at"] != "2026-11-23T00:00:00Z" {
				t.Errorf("429 body %s", r.Body)
			}
		default:
			t.Errorf("send = %d %s", r.Status, r.Body)
		}
	}
	if ok != 10 || limited != 40 {
		t.Fatalf("%d accepted and %d refused, want 10 and 40", ok, limited)
	}
	e.waitCounts(org, 20*time.Second, "10 messages delivered", func(c map[string]int) bool { return c["delivered"] == 10 })
	if got := e.networkMessages(org); got != 10 {
		t.Fatalf("the network holds %d messages, want exactly 10", got)
	}
	// The next UTC day starts a new allowance.
	e.Clock.Set(time.Date(2026, 11, 23, 0, 0, 1, 0, time.UTC))
	accepted(t, e.send(org, text(sid, phoneN(100), "a new day")))
}

// With 5/s burst 5, thirty messages of one sender take at least five seconds
// to deliver, while another sender's messages go out at once: they never wait
// for a token (their jobs never snooze) and are all delivered while the busy
// sender still has messages waiting. A job snoozes at most once. Every
// message has a recipient of its own, so that no delivery waits for an
// earlier message of its conversation (docs/api.md, §Delivery order).
//
// "At once" is judged against the busy sender's own progress, not a clock:
// this test once required the quiet messages within 2 s of their sends, which
// a loaded machine missed. The worker starts once all 33 are accepted, so the
// busy sender's backlog (5 s at its rate) does not depend on how fast the
// machine accepts them.
func TestThrottlePerSender(t *testing.T) {
	t.Parallel()
	rate := map[string]string{"SENDER_RATE": "5", "SENDER_BURST": "5"}
	e := startMsg(t, Options{Env: rate}) // API only: the worker starts below
	org := e.Register(t)
	busy := e.activeSender(org, phoneN(1))
	quiet := e.activeSender(org, phoneN(2))
	for i := range 33 {
		e.recipient(phoneN(100 + i))
	}

	for i := range 30 {
		accepted(t, e.send(org, text(busy, phoneN(100+i), fmt.Sprintf("busy %d", i))))
	}
	var quietIDs []int64
	for i := range 3 {
		quietIDs = append(quietIDs, accepted(t, e.send(org, text(quiet, phoneN(130+i), fmt.Sprintf("quiet %d", i)))).ID)
	}
	began := time.Now()
	StartWorker(t, e.DatabaseURL, rate, app.Options{Clock: e.Clock})
	// The busy sender's messages still waiting when the quiet sender's last
	// is seen delivered.
	var busyLeft int
	poll(t, 30*time.Second, func() (bool, string) {
		var quietDone int
		if err := e.App.DB.Pool.QueryRow(context.Background(), fmt.Sprintf(`SELECT
			count(*) FILTER (WHERE sender_number_id = $1 AND status = 'delivered'),
			count(*) FILTER (WHERE sender_number_id = $2 AND status = 'queued')
			FROM %s`, org.Tenant.Table("messages")), quiet, busy).Scan(&quietDone, &busyLeft); err != nil {
			t.Fatal(err)
		}
		return quietDone == len(quietIDs), fmt.Sprintf("%d of the quiet sender's %d messages delivered", quietDone, len(quietIDs))
	})
	if busyLeft == 0 {
		t.Fatal("the quiet sender's messages were delivered only after all the busy sender's: held up by the busy sender")
	}
	var quietSnoozes int
	if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT coalesce(sum((metadata->>'snoozes')::int), 0)
		FROM river.river_job WHERE kind = 'message_delivery' AND (args->>'sender_id')::bigint = $1`, quiet).Scan(&quietSnoozes); err != nil {
		t.Fatal(err)
	}
	if quietSnoozes != 0 {
		t.Fatalf("the quiet sender's delivery jobs snoozed %d times: they waited for tokens behind the busy sender", quietSnoozes)
	}
	t.Logf("the quiet sender's messages delivered with %d of the busy sender's still queued", busyLeft)
	e.waitCounts(org, 30*time.Second, "all delivered", func(c map[string]int) bool { return c["delivered"] == 33 })
	took := time.Since(began)
	if took < 5*time.Second {
		t.Fatalf("30 messages at 5/s burst 5 delivered in %s, want at least 5s", took)
	}
	t.Logf("30 throttled messages delivered in %s", took)
	var maxSnoozes int
	if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT coalesce(max((metadata->>'snoozes')::int), 0)
		FROM river.river_job WHERE kind = 'message_delivery'`).Scan(&maxSnoozes); err != nil {
		t.Fatal(err)
	}
	if maxSnoozes > 1 {
		t.Fatalf("a delivery job snoozed %d times; the throttle must reserve a token and snooze once", maxSnoozes)
	}
	if got := e.networkMessages(org); got != 33 {
		t.Fatalf("network holds %d messages, want 33", got)
	}
}

// gatedNetwork holds the first delivery of the content hold until release is
// closed, and closes held when it arrives: a test acts while a message is on
// its way, however fast or slow the machine.
type gatedNetwork struct {
	network.Network
	hold          string
	once          sync.Once
	held, release chan struct{}
}

func newGatedNetwork(hold string) *gatedNetwork {
	return &gatedNetwork{hold: hold, held: make(chan struct{}), release: make(chan struct{})}
}

func (g *gatedNetwork) Deliver(ctx context.Context, m network.Message) (network.Delivery, error) {
	first := false
	if m.Content == g.hold {
		g.once.Do(func() { first = true })
	}
	if first {
		close(g.held)
		select {
		case <-g.release:
		case <-ctx.Done():
			return network.Delivery{}, ctx.Err()
		}
	}
	return g.Network.Deliver(ctx, m)
}

// A limit lowered after acceptance holds for messages not yet delivered: they
// fail with daily_limit_exceeded and are not delivered.
//
// Five messages of one conversation go one after another, each claimed (its
// place under the daily limit taken) only once the one before it is
// delivered. The limit is lowered from 5 to 2 while the second message is
// held inside the network's Deliver: two have claimed their places, three
// have not. (This test once lowered the limit inside a 2-second throttle
// window, which a loaded machine missed.)
func TestLoweredLimitHonouredByDelivery(t *testing.T) {
	t.Parallel()
	gate := newGatedNetwork("m1")
	e := startMsg(t, Options{Workers: true, Network: func(base network.Network) network.Network { gate.Network = base; return gate }})
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	e.recipient(phoneN(10))
	five := 5
	e.setLimit(org, sid, &five)
	var ids []int64
	for i := range 5 {
		ids = append(ids, accepted(t, e.send(org, text(sid, phoneN(10), fmt.Sprintf("m%d", i)))).ID)
	}
	select {
	case <-gate.held:
	case <-time.After(20 * time.Second):
		t.Fatalf("the second message never reached the network; counts %v", e.statusCounts(org))
	}
	if c := e.statusCounts(org); c["delivered"] != 1 || c["queued"] != 4 {
		t.Fatalf("counts %v while the second message is on its way, want 1 delivered and 4 queued", c)
	}
	two := 2
	e.setLimit(org, sid, &two)
	close(gate.release)
	c := e.waitCounts(org, 20*time.Second, "every message sent or failed", func(c map[string]int) bool { return c["queued"] == 0 })
	if c["delivered"] != 2 || c["failed"] != 3 {
		t.Fatalf("counts %v, want 2 delivered and 3 failed", c)
	}
	if got := e.networkMessages(org); got != 2 {
		t.Fatalf("network holds %d messages, want 2", got)
	}
	for _, id := range ids {
		m := e.getMessage(org, id)
		switch m.Status {
		case "delivered":
			if m.MessageID == nil || m.SentAt == nil {
				t.Fatalf("sent message %+v", m)
			}
		case "failed":
			if m.ErrorCode == nil || *m.ErrorCode != "daily_limit_exceeded" || m.ErrorMessage == nil || m.MessageID != nil {
				t.Fatalf("failed message %+v", m)
			}
		}
	}
}

// flakyNetwork fails deliveries with a transient error while failing is set,
// and lookups while lookupsFailing is (as a network that does not answer)
// or lookupsDatabaseDown is (as the built-in network whose database
// refuses connections).
type flakyNetwork struct {
	network.Network
	failing             atomic.Bool
	lookupsFailing      atomic.Bool
	lookupsDatabaseDown atomic.Bool
	attempts            atomic.Int32
}

func (f *flakyNetwork) Lookup(ctx context.Context, p, sender string) (network.Account, error) {
	if f.lookupsFailing.Load() {
		return network.Account{}, errors.New("network: connection refused")
	}
	if f.lookupsDatabaseDown.Load() {
		return network.Account{}, network.Platform(fmt.Errorf("lookup %s: %w", p,
			&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}))
	}
	return f.Network.Lookup(ctx, p, sender)
}

func (f *flakyNetwork) Deliver(ctx context.Context, m network.Message) (network.Delivery, error) {
	f.attempts.Add(1)
	if f.failing.Load() {
		return network.Delivery{}, errors.New("network: connection refused")
	}
	return f.Network.Deliver(ctx, m)
}

// A message accepted while the network is failing is delivered once it
// recovers; a refusal the network gives later is final (failed, with the
// network's code).
func TestDeliveryAfterNetworkRecovers(t *testing.T) {
	t.Parallel()
	flaky := &flakyNetwork{}
	e := startMsg(t, Options{
		Workers: true,
		Jobs:    queue.Config{DeliveryRetryBase: 100 * time.Millisecond, DeliveryRetryMax: 500 * time.Millisecond},
		Network: func(base network.Network) network.Network { flaky.Network = base; return flaky },
	})
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	e.recipient(phoneN(10))
	e.recipient(phoneN(11))

	flaky.failing.Store(true)
	m := accepted(t, e.send(org, text(sid, phoneN(10), "through the outage")))
	blocked := accepted(t, e.send(org, text(sid, phoneN(11), "blocked meanwhile")))
	poll(t, 10*time.Second, func() (bool, string) {
		n := flaky.attempts.Load()
		return n >= 6, fmt.Sprintf("only %d delivery attempts during the outage", n)
	})
	if got := e.getMessage(org, m.ID); got.Status != "queued" {
		t.Fatalf("message during the outage: %s", got.Status)
	}
	if err := e.net.Block(context.Background(), phoneN(11), phoneN(1)); err != nil {
		t.Fatal(err)
	}
	flaky.failing.Store(false)

	sent := e.waitStatus(org, m.ID, "delivered", 10*time.Second)
	if sent.MessageID == nil || sent.ConversationID == nil || sent.SentAt == nil || sent.ErrorCode != nil {
		t.Fatalf("delivered message %+v", sent)
	}
	inbox, err := e.net.Inbox(context.Background(), phoneN(10))
	if err != nil || len(inbox) != 1 || inbox[0].Content != "through the outage" || inbox[0].FromPhone != phoneN(1) {
		t.Fatalf("recipient inbox %+v %v", inbox, err)
	}
	refused := e.waitStatus(org, blocked.ID, "failed", 10*time.Second)
	if refused.ErrorCode == nil || *refused.ErrorCode != "blocked_sender" || refused.ErrorMessage == nil || refused.SentAt != nil {
		t.Fatalf("refused message %+v", refused)
	}
	if got := e.networkMessages(org); got != 1 {
		t.Fatalf("network holds %d messages, want 1", got)
	}
	// Every acceptance and delivery ran in a batch run, counted by kind.
	r := e.Do(Request{Method: http.MethodGet, Path: "/metrics"})
	for _, series := range []string{`batch_size_count{kind="accept"} 2`, `batch_size_count{kind="deliver"}`} {
		if !strings.Contains(string(r.Body), series) {
			t.Errorf("metrics lack %s:\n%.3000s", series, r.Body)
		}
	}
}

// A worker process killed mid-delivery leaves its jobs running, orphaned;
// with the production figures (no test overrides: a delivery's run bound
// NETWORK_TIMEOUT + 3 s, orphaned after 2 s more, looked for every second),
// another worker process delivers every one of them within 15 s of the
// kill, exactly once (docs/design.md, §Orphaned deliveries).
func TestDeliveryAfterWorkerCrash(t *testing.T) {
	t.Parallel()
	bin := platformBinary(t)
	e := startMsg(t, Options{}) // API only: the subprocess works the jobs
	ctx := context.Background()
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	for i := range 4 {
		e.recipient(phoneN(10 + i))
	}
	// Slow delivery, so that jobs are mid-delivery (waiting for their token)
	// when the worker dies: one every 200 ms.
	if _, err := e.App.DB.Pool.Exec(ctx,
		`UPDATE central.organizations SET sender_rate = 5, sender_burst = 1 WHERE id = $1`, org.ID); err != nil {
		t.Fatal(err)
	}
	const n = 40
	for i := range n {
		accepted(t, e.send(org, text(sid, phoneN(10+i%4), fmt.Sprintf("crash %d", i))))
	}

	cmd := exec.CommandContext(t.Context(), bin, "worker")
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+e.DatabaseURL,
		"DB_MAX_CONNS=4",
		"LOG_LEVEL=error",
		"JWT_SECRET="+strings.Repeat("j", 32),
		"API_KEY_PEPPER="+strings.Repeat("p", 32),
	)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	running := func() []int64 {
		rows, err := e.App.DB.Pool.Query(ctx, `SELECT id FROM river.river_job
			WHERE kind = 'message_delivery' AND state = 'running' ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	poll(t, 30*time.Second, func() (bool, string) {
		c, r := e.statusCounts(org), len(running())
		return c["delivered"] >= 5 && r > 0, fmt.Sprintf("the worker did not get going: %v, %d running", c, r)
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killedAt := time.Now()
	killed = true
	before := e.statusCounts(org)
	orphans := running()
	if len(orphans) == 0 || before["delivered"] == n {
		t.Fatalf("after the kill: %v, %d jobs left running; want jobs left running mid-delivery", before, len(orphans))
	}
	t.Logf("killed the worker with %d messages delivered and %d jobs orphaned", before["delivered"], len(orphans))
	// The surviving worker delivers at a normal pace: what it takes is the
	// orphans' rescue, not the throttle.
	if _, err := e.App.DB.Pool.Exec(ctx,
		`UPDATE central.organizations SET sender_rate = NULL, sender_burst = NULL WHERE id = $1`, org.ID); err != nil {
		t.Fatal(err)
	}

	// Another worker process, as configured in production.
	StartWorker(t, e.DatabaseURL, nil, app.Options{Clock: e.Clock})

	const within = 15 * time.Second
	e.waitCounts(org, time.Until(killedAt.Add(within)), fmt.Sprintf("every message delivered within %s of the kill", within),
		func(c map[string]int) bool { return c["delivered"] == n })
	t.Logf("all %d messages delivered %s after the kill", n, time.Since(killedAt).Round(100*time.Millisecond))
	if got := e.networkMessages(org); got != n {
		t.Fatalf("the network holds %d messages for %d accepted: not exactly once", got, n)
	}
	// Each message's network id is the network's message with its reference.
	e.requireNetworkIDs(org)
	// The orphans were freed by the Rescuer, each once, and their second
	// runs finish (River records a run's end just after its message). Their
	// messages may have gone before that, carried on by the jobs of the
	// messages before them in their conversations; the rescue itself comes
	// about 11 s after the kill (docs/design.md, §Orphaned deliveries).
	var rescued int
	if !until(time.Until(killedAt.Add(within+5*time.Second)), func() bool {
		if err := e.App.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM river.river_job
			WHERE id = ANY($1) AND state = 'completed' AND (metadata ->> 'river:rescue_count')::int = 1
			  AND errors[array_upper(errors, 1)] ->> 'error' LIKE '%its worker stopped answering%'`, orphans).Scan(&rescued); err != nil {
			t.Fatal(err)
		}
		return rescued == len(orphans)
	}) {
		rows, err := e.App.DB.Pool.Query(ctx, `SELECT format('%s %s %s %s', id, state, metadata, errors)
			FROM river.river_job WHERE id = ANY($1)`, orphans)
		if err != nil {
			t.Fatal(err)
		}
		jobs, _ := pgx.CollectRows(rows, pgx.RowTo[string])
		t.Fatalf("%d of the %d orphaned jobs were rescued once and completed: %q", rescued, len(orphans), jobs)
	}
}

// A network that does not answer a lookup: the send and the lookup answer
// 503 network_unavailable at once, and nothing is stored.
func TestNetworkUnavailableAtAcceptance(t *testing.T) {
	t.Parallel()
	flaky := &flakyNetwork{}
	e := startMsg(t, Options{Network: func(base network.Network) network.Network { flaky.Network = base; return flaky }})
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	e.recipient(phoneN(2))
	flaky.lookupsFailing.Store(true)
	wantError(t, e.send(org, text(sid, phoneN(2), "x"), map[string]string{"Idempotency-Key": "k"}),
		http.StatusServiceUnavailable, "network_unavailable")
	wantError(t, e.lookup(org, map[string][]string{"phone": {phoneN(2)}}), http.StatusServiceUnavailable, "network_unavailable")
	if c := e.statusCounts(org); len(c) != 0 {
		t.Fatalf("messages stored: %v", c)
	}
	flaky.lookupsFailing.Store(false)
	// The refused request left no idempotency record: the same key sends now.
	accepted(t, e.send(org, text(sid, phoneN(2), "x"), map[string]string{"Idempotency-Key": "k"}))
}

// The built-in network's accounts are in the platform's database: a lookup
// that fails because the database refuses connections is the database's
// failure, so the send and the lookup answer 503 service_unavailable (not
// network_unavailable), and nothing is stored.
func TestDatabaseDownAtLookup(t *testing.T) {
	t.Parallel()
	flaky := &flakyNetwork{}
	e := startMsg(t, Options{Network: func(base network.Network) network.Network { flaky.Network = base; return flaky }})
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	e.recipient(phoneN(2))
	flaky.lookupsDatabaseDown.Store(true)
	wantError(t, e.send(org, text(sid, phoneN(2), "x"), map[string]string{"Idempotency-Key": "k"}),
		http.StatusServiceUnavailable, "service_unavailable")
	wantError(t, e.lookup(org, map[string][]string{"phone": {phoneN(2)}}), http.StatusServiceUnavailable, "service_unavailable")
	if c := e.statusCounts(org); len(c) != 0 {
		t.Fatalf("messages stored: %v", c)
	}
	flaky.lookupsDatabaseDown.Store(false)
	accepted(t, e.send(org, text(sid, phoneN(2), "x"), map[string]string{"Idempotency-Key": "k"}))
}
