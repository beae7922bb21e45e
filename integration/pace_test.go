package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Rates across processes (docs/design.md, §Rates across processes): a
// sender's delivery rate and an API key's request rate hold in total,
// however many worker or api processes share the database.

// startProcess runs `platform <command>` on the test's database with the
// test harness's secrets and extra environment, and kills it at cleanup.
func startProcess(t *testing.T, dbURL, command string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), platformBinary(t), command)
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+dbURL,
		"DB_MAX_CONNS=4",
		"LOG_LEVEL=error",
		"JWT_SECRET="+strings.Repeat("j", 32),
		"API_KEY_PEPPER="+strings.Repeat("p", 32),
	)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// Three worker processes deliver one sender's messages at the sender's rate
// R in total (within ±10% over 10 s), not at 3R, while a backlog waits and
// sends keep arriving at 3R, so that every worker fetches some of them.
func TestSenderRateAcrossWorkers(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{}) // API only: three subprocesses work the jobs
	ctx := context.Background()
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	// A recipient per message: messages of one conversation go one after
	// the other (docs/api.md, §Delivery order), which is not what this
	// test measures.
	const recipients = 500
	for i := range recipients {
		e.recipient(phoneN(100 + i))
	}
	const rate = 8.0
	// The key's own request limit must not be what paces the sends.
	if _, err := e.App.DB.Pool.Exec(ctx, `UPDATE central.organizations
		SET sender_rate = $2, sender_burst = 1, api_rate_limit = 1000, api_rate_burst = 1000 WHERE id = $1`,
		org.ID, rate); err != nil {
		t.Fatal(err)
	}
	var next atomic.Int64 // the next message's number, and so its recipient
	send := func() {
		i := next.Add(1) - 1
		r := e.send(org, text(sid, phoneN(100+int(i)%recipients), fmt.Sprintf("paced %d", i)))
		if r.Status != http.StatusAccepted {
			t.Errorf("send %d = %d %s", i, r.Status, r.Body)
		}
	}
	// A backlog of 20 s at the rate before any worker starts: on a loaded
	// machine one request can take longer than 1/(3R), and a measurement
	// whose supply ran dry would measure the sends, not the workers.
	const backlog = int(20 * rate)
	var preload sync.WaitGroup
	for range 8 {
		preload.Go(func() {
			for next.Load() < int64(backlog) {
				send()
			}
		})
	}
	preload.Wait()
	for range 3 {
		startProcess(t, e.DatabaseURL, "worker")
	}
	// A steady stream at three times the rate, for the whole measurement:
	// each new job goes to whichever worker fetches it first, so every
	// worker has the sender's jobs at once.
	sendCtx, stopSending := context.WithCancel(ctx)
	var senders sync.WaitGroup
	for range 3 {
		senders.Go(func() {
			tick := time.NewTicker(time.Second / rate)
			defer tick.Stop()
			for {
				select {
				case <-sendCtx.Done():
					return
				case <-tick.C:
					if next.Load() >= recipients { // one message per conversation
						return
					}
					send()
				}
			}
		})
	}
	defer stopSending()
	done := func() int {
		c := e.statusCounts(org)
		return c["sent"] + c["delivered"] + c["read"]
	}
	poll(t, 30*time.Second, func() (bool, string) {
		return done() >= 3, fmt.Sprintf("the workers did not get going: %v", e.statusCounts(org))
	})
	// Time itself is what is tested: a rate, over ten seconds of the
	// database's clock that paces the workers.
	from, c0 := time.Now(), done()
	time.Sleep(10 * time.Second)
	c1, took := done(), time.Since(from)
	stopSending()
	senders.Wait()
	got := float64(c1-c0) / took.Seconds()
	t.Logf("%d of %d messages delivered in %s by 3 workers: %.2f/s at a rate of %.0f/s", c1-c0, next.Load(), took.Round(time.Millisecond), got, rate)
	if q := e.statusCounts(org)["queued"]; q == 0 {
		t.Fatalf("no message was left queued after the measurement: the supply, not the workers, set the rate")
	}
	if got < rate*0.9 || got > rate*1.1 {
		t.Fatalf("3 workers delivered %.2f messages/s for one sender at %.0f/s, want within 10%%", got, rate)
	}
	// Every worker delivered some: River recorded which client ran each job.
	workers := e.deliveryWorkers()
	if workers < 3 {
		t.Fatalf("%d of 3 worker processes ran deliveries; the test needs them to share the sender", workers)
	}
}

// Two api processes answer one key at its limit L in total (within ±10% of
// L 2xx a second over about 6 s), not at 2L; the others get 429 with Retry-After.
func TestKeyRateAcrossAPIs(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	ctx := context.Background()
	org := e.Register(t)
	// A burst of a few slots absorbs the jitter of the requests' arrival,
	// as it does for real clients (with a burst of 1, a slot is lost for
	// the time between its due time and the next request).
	const limit, burst = 20.0, 5
	if _, err := e.App.DB.Pool.Exec(ctx,
		`UPDATE central.organizations SET api_rate_limit = $2, api_rate_burst = $3 WHERE id = $1`, org.ID, limit, burst); err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for range 2 {
		addr := freeAddr(t)
		startProcess(t, e.DatabaseURL, "api", "HTTP_ADDR="+addr)
		addrs = append(addrs, addr)
	}
	for _, addr := range addrs {
		if !waitReady(t, "http://"+addr+"/readyz", 30*time.Second) {
			t.Fatalf("the api process on %s did not get ready", addr)
		}
	}

	var ok, refused, other atomic.Int64
	var mu sync.Mutex
	var first, last time.Time // of the 200 answers
	var badRefusal atomic.Value
	const window = 6 * time.Second
	stop := time.Now().Add(window)
	var wg sync.WaitGroup
	for i := range 6 {
		addr := addrs[i%len(addrs)]
		wg.Go(func() {
			for time.Now().Before(stop) {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api/v1/me", nil)
				if err != nil {
					t.Error(err)
					return
				}
				req.Header.Set("X-Api-Key", org.APIKey)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					ok.Add(1)
					now := time.Now()
					mu.Lock()
					if first.IsZero() {
						first = now
					}
					last = now
					mu.Unlock()
				case http.StatusTooManyRequests:
					refused.Add(1)
					if resp.Header.Get("Retry-After") == "" {
						badRefusal.Store("a 429 without Retry-After")
					}
				default:
					other.Add(1)
				}
			}
		})
	}
	wg.Wait()
	// The rate between the first and the last 200: the first ones are the
	// burst, each of the others one slot.
	got := float64(ok.Load()-burst) / last.Sub(first).Seconds()
	t.Logf("2 api processes: %d answered 200 (%.2f/s at a limit of %.0f/s), %d refused", ok.Load(), got, limit, refused.Load())
	if other.Load() > 0 {
		t.Fatalf("%d answers were neither 200 nor 429", other.Load())
	}
	if v := badRefusal.Load(); v != nil {
		t.Fatal(v)
	}
	if refused.Load() == 0 {
		t.Fatal("nothing was refused: the clients did not press the limit")
	}
	if got < limit*0.9 || got > limit*1.1 {
		t.Fatalf("two api processes answered %.2f requests/s for one key at %.0f/s, want within 10%%", got, limit)
	}
}
