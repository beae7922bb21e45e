package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// webhookRound is one round of the webhook phase: the service's closed loop
// over the first -tenants count without a webhook endpoint and with one per
// tenant (subscribed to every event), back to back, and the delivery of the
// with-endpoint run's webhooks to a local receiver.
type webhookRound struct {
	Without loadResult `json:"without_endpoint"`
	With    loadResult `json:"with_endpoint"`
	// WithFirst tells the round's order.
	WithFirst bool `json:"with_first"`
	// Ratio is With's rate over Without's.
	Ratio float64 `json:"ratio"`
	// CPUWithout and CPUWith are the milliseconds of CPU time the whole
	// machine's processes (the service, Postgres, the load generator) used
	// per accepted message, from the start of each run until its messages
	// were sent (not the webhooks' delivery after it), and CPURatio
	// CPUWithout over CPUWith: the share of its rate the send path would
	// keep on a machine it saturated. Unlike the rates, CPU time does not
	// count what the machine waited for, nor what a hypervisor stole.
	CPUWithout float64 `json:"cpu_ms_per_message_without"`
	CPUWith    float64 `json:"cpu_ms_per_message_with"`
	CPURatio   float64 `json:"cpu_ratio"`
	// StealWithout and StealWith are the percent of the machine's CPU
	// time a hypervisor stole during each run (the same span as the CPU
	// time): where it differs between the runs, so does their rate.
	StealWithout float64 `json:"steal_pct_without"`
	StealWith    float64 `json:"steal_pct_with"`
	// Webhooks is how many webhook requests the receiver took for the
	// with-endpoint run's messages (two per message: message.sent and
	// message.delivered), and Rate how many a second, from the first
	// request to the last.
	Webhooks int64   `json:"webhooks"`
	Rate     float64 `json:"webhooks_per_s"`
	// DuringRun is how many of them arrived while the run and the
	// delivery of its messages lasted, and DrainRate how many a second
	// arrived after (the service's webhook attempts yield to its send
	// path on a busy machine, then catch up).
	DuringRun int64   `json:"webhooks_during_run"`
	DrainRate float64 `json:"webhooks_drain_per_s"`
	// Yields is how many webhook attempts the service held back for the
	// send path in the with-endpoint run and its drain (the increase of
	// its webhook_yields_total).
	Yields int64 `json:"webhook_yields"`
	// Complete: every expected webhook arrived.
	Complete bool `json:"complete"`
	// Checkpoints is how many checkpoints the server started during the
	// round's two runs (each begins right after one, settleWebhooks).
	Checkpoints int64 `json:"checkpoints"`
	// WorkWithout and WorkWith are each run's WAL and shared statements
	// per message (runWork).
	WorkWithout runWork `json:"work_without"`
	WorkWith    runWork `json:"work_with"`
}

// hookReceiver is the organizations' webhook server: it answers every
// request 204 at once and counts them, with the times of the first and the
// last.
type hookReceiver struct {
	srv         *http.Server
	url         string
	n           atomic.Int64
	mu          sync.Mutex
	first, last time.Time
	// marked is when mark was called, and atMark how many requests had
	// arrived then.
	marked time.Time
	atMark int64
}

func startHookReceiver() (*hookReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("webhook receiver: %w", err)
	}
	r := &hookReceiver{url: "http://" + ln.Addr().String() + "/hooks"}
	r.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		now := time.Now()
		r.mu.Lock()
		if r.first.IsZero() {
			r.first = now
		}
		r.last = now
		r.mu.Unlock()
		r.n.Add(1)
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// reset forgets what the receiver took.
func (r *hookReceiver) reset() {
	r.mu.Lock()
	r.first, r.last, r.marked, r.atMark = time.Time{}, time.Time{}, time.Time{}, 0
	r.mu.Unlock()
	r.n.Store(0)
}

// await waits until the receiver has taken n requests, or timeout passes
// (the caller sees what arrived in rate).
func (r *hookReceiver) await(ctx context.Context, n int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for r.n.Load() < n && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// mark notes the time and the requests taken so far (drain).
func (r *hookReceiver) mark() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.marked, r.atMark = time.Now(), r.n.Load()
}

// drain returns the requests taken before mark, and the rate of those
// taken after it, from the mark to the last.
func (r *hookReceiver) drain() (int64, float64) {
	n := r.n.Load()
	r.mu.Lock()
	defer r.mu.Unlock()
	if d := r.last.Sub(r.marked).Seconds(); n > r.atMark && d > 0 {
		return r.atMark, float64(n-r.atMark) / d
	}
	return r.atMark, 0
}

// rate returns the requests taken and their rate from the first to the last.
func (r *hookReceiver) rate() (int64, float64) {
	n := r.n.Load()
	r.mu.Lock()
	defer r.mu.Unlock()
	if d := r.last.Sub(r.first).Seconds(); n > 1 && d > 0 {
		return n, float64(n-1) / d
	}
	return n, 0
}

// webhooks runs -webhook-rounds rounds of webhookRound over the first
// -tenants count and returns them and the median ratio, then the
// interleaved measurement (-webhook-slices; nil when skipped). With
// -cpuprofile it profiles the service (at pprofAddr) during the first
// round's run with an endpoint.
func (b *sendBench) webhooks(ctx context.Context, g *loadGen, addr, pprofAddr string, server serverSettings) ([]webhookRound, float64, *webhookSlices, error) {
	if b.cfg.WebhookRounds == 0 && b.cfg.WebhookSlices == 0 {
		return nil, 0, nil, nil
	}
	first := b.tenants[:b.cfg.Tenants[0]]
	rcv, err := startHookReceiver()
	if err != nil {
		return nil, 0, nil, err
	}
	defer func() { _ = rcv.srv.Close() }()
	if err := b.webhookWarmup(ctx, g, addr, first, rcv); err != nil {
		return nil, 0, nil, err
	}
	var rounds []webhookRound
	for r := range b.cfg.WebhookRounds {
		rd := webhookRound{WithFirst: r%2 == 0}
		round := fmt.Sprintf("webhook round %d/%d, ", r+1, b.cfg.WebhookRounds)
		without := func() error {
			run, err := b.webhookRun(ctx, g, addr, first, round+"no endpoint: ", fmt.Sprintf("bench-nohook-r%d", r), nil)
			rd.Without, rd.CPUWithout, rd.StealWithout, rd.WorkWithout = run.res, run.cpu, run.steal, run.work
			return err
		}
		with := func() error {
			ids, err := b.addEndpoints(ctx, addr, first, rcv.url)
			if err != nil {
				return err
			}
			rcv.reset()
			var prof <-chan error
			if r == 0 && b.cpuProfile != "" {
				prof = grabProfile(pprofAddr, max(int(b.cfg.SweepDuration.Seconds())-1, 1), b.cpuProfile+".webhooks")
			}
			run, err := b.webhookRun(ctx, g, addr, first, round+"one endpoint: ", fmt.Sprintf("bench-hook-r%d", r), rcv.mark)
			rd.With, rd.CPUWith, rd.StealWith, rd.WorkWith = run.res, run.cpu, run.steal, run.work
			if err != nil {
				return err
			}
			if prof != nil {
				if err := <-prof; err != nil {
					return err
				}
			}
			want := 2 * rd.With.OK
			b.prog.phase(fmt.Sprintf("%swebhooks of %d messages", round, rd.With.OK))
			if err := rcv.await(ctx, want, b.cfg.DeliveryTimeout); err != nil {
				return err
			}
			rd.Webhooks, rd.Rate = rcv.rate()
			rd.DuringRun, rd.DrainRate = rcv.drain()
			after, err := b.readWork(ctx, addr)
			if err != nil {
				return err
			}
			rd.Yields = after.yields - run.start.yields
			rd.Complete = rd.Webhooks >= want
			return b.deleteEndpoints(ctx, addr, first, ids)
		}
		// Each run starts settled, and counts the checkpoints it started.
		settled := func(run func() error) func() error {
			return func() error {
				if err := b.settleWebhooks(ctx, first); err != nil {
					return err
				}
				before, err := server.checkpoints(ctx, b.d)
				if err != nil {
					return err
				}
				if err := run(); err != nil {
					return err
				}
				after, err := server.checkpoints(ctx, b.d)
				rd.Checkpoints += after - before
				return err
			}
		}
		if err := inTurn(rd.WithFirst, settled(with), settled(without)); err != nil {
			return rounds, 0, nil, err
		}
		rd.Ratio = ratio(rd.With.Rate, rd.Without.Rate)
		rd.CPURatio = ratio(rd.CPUWithout, rd.CPUWith)
		rounds = append(rounds, rd)
	}
	median := medianRatio(rounds, func(r webhookRound) float64 { return r.Ratio })
	if b.cfg.WebhookSlices == 0 {
		return rounds, median, nil, nil
	}
	sliced, err := b.webhookSliced(ctx, g, addr, first, rcv)
	return rounds, median, sliced, err
}

// webhookWarmupSends is how many messages the webhook warm-up sends.
const webhookWarmupSends = 1000

// webhookWarmup runs, unmeasured, webhookWarmupSends sends with an endpoint
// per tenant and waits for their webhooks, so that the tenants' webhook
// tables hold rows to plan for when each run's vacuumWebhooks analyzes
// them. They were empty when the database was settled, and with
// autovacuum off nothing would analyze them as they grow: the
// service's prepared statements would keep generic plans made for empty
// tables, which find a delivery by id with a sequential scan (34,063
// scans reading 230 million rows in one 8-second round, before this
// warm-up). In production autovacuum analyzes a table after its first 50
// changes, and the plans are made again; here vacuumWebhooks does, before
// each measured run.
func (b *sendBench) webhookWarmup(ctx context.Context, g *loadGen, addr string, ts []benchTenant, rcv *hookReceiver) error {
	ids, err := b.addEndpoints(ctx, addr, ts, rcv.url)
	if err != nil {
		return err
	}
	rcv.reset()
	g.progress = b.prog.phase(fmt.Sprintf("webhook warm-up, %d sends", webhookWarmupSends))
	res, err := g.closed(ctx, b.cfg.Concurrency, b.cfg.DeliveryTimeout, b.sendRequests(addr, ts, "bench-hook-warmup"),
		func(ok int64) bool { return ok >= webhookWarmupSends })
	if err != nil {
		return err
	}
	if _, err := b.delivered(ctx, ts, "bench-hook-warmup", res.OK); err != nil {
		return err
	}
	if err := rcv.await(ctx, 2*res.OK, b.cfg.DeliveryTimeout); err != nil {
		return err
	}
	return b.deleteEndpoints(ctx, addr, ts, ids)
}

// settleWebhooks starts a webhook run from a settled database: its tables
// vacuumed (vacuumWebhooks), then a checkpoint. A round writes on the
// order of 100 MB of WAL (6.5 kB a message without an endpoint, 10.7 kB
// with, then the webhooks' attempts), so a checkpoint (checkpoint_timeout,
// 5 min by default, or max_wal_size) could start inside a run and make
// the next write of each page a full-page image: a slower run, with or
// without the endpoint at random. One just before each run keeps them out
// (the round line counts those that started anyway; none did in the runs
// on machine D, docs/performance-log.md). CHECKPOINT needs
// superuser or pg_checkpoint; without, the first refusal is kept for the
// report and runs go on.
func (b *sendBench) settleWebhooks(ctx context.Context, ts []benchTenant) error {
	if err := b.vacuumWebhooks(ctx, ts); err != nil {
		return err
	}
	b.checkpointNow(ctx)
	return nil
}

// vacuumWebhooks vacuums and analyzes what a webhook run writes: the
// tenants' webhook tables and messages, and River's jobs. With autovacuum
// off nothing else would, and each run would work on the dead rows of the
// ones before it (deleting a round's endpoint deletes its deliveries); in
// production autovacuum keeps up with them.
func (b *sendBench) vacuumWebhooks(ctx context.Context, ts []benchTenant) error {
	tables := []string{"river.river_job"}
	for _, t := range ts {
		for _, name := range []string{"webhook_endpoints", "webhook_outbox", "webhook_deliveries", "messages"} {
			tables = append(tables, t.Tenant.Table(name))
		}
	}
	for chunk := range sliceChunks(tables, 100) {
		if _, err := b.d.Pool.Exec(ctx, "VACUUM (ANALYZE) "+strings.Join(chunk, ", ")); err != nil {
			return fmt.Errorf("vacuum the webhook tables: %w", err)
		}
	}
	return nil
}

// awaitOutboxes waits until the tenants' webhook outboxes are empty: every
// event the service recorded is a delivery (the service expands its outbox
// behind its yield gate, so after a run of sends a backlog may wait there).
func (b *sendBench) awaitOutboxes(ctx context.Context, ts []benchTenant) error {
	deadline := time.Now().Add(b.cfg.DeliveryTimeout)
	for _, t := range ts {
		for {
			var pending bool
			if err := b.d.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM `+t.Tenant.Table("webhook_outbox")+`)`).Scan(&pending); err != nil {
				return fmt.Errorf("look at the webhook outbox: %w", err)
			}
			if !pending {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the webhook outbox of %s is not empty after %s", t.Tenant.Schema, b.cfg.DeliveryTimeout)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// addEndpoints gives each tenant one webhook endpoint at url through the
// Tenant API and returns their ids.
func (b *sendBench) addEndpoints(ctx context.Context, addr string, ts []benchTenant, url string) ([]int64, error) {
	ids := make([]int64, len(ts))
	for i, t := range ts {
		body, err := json.Marshal(map[string]any{"url": url, "description": "bench"})
		if err != nil {
			return nil, err
		}
		var out struct {
			Data struct {
				ID int64 `json:"id"`
			} `json:"data"`
		}
		if err := b.tenantCall(ctx, http.MethodPost, "http://"+addr+"/api/v1/webhooks", t.APIKey, body, http.StatusCreated, &out); err != nil {
			return nil, fmt.Errorf("add webhook endpoint: %w", err)
		}
		ids[i] = out.Data.ID
	}
	return ids, nil
}

// deleteEndpoints deletes the endpoints addEndpoints made.
func (b *sendBench) deleteEndpoints(ctx context.Context, addr string, ts []benchTenant, ids []int64) error {
	for i, t := range ts {
		u := "http://" + addr + "/api/v1/webhooks/" + strconv.FormatInt(ids[i], 10)
		if err := b.tenantCall(ctx, http.MethodDelete, u, t.APIKey, nil, http.StatusNoContent, nil); err != nil {
			return fmt.Errorf("delete webhook endpoint: %w", err)
		}
	}
	return nil
}

// tenantCall makes one Tenant API request with key and decodes the answer
// into out (when not nil), which must have status want.
func (b *sendBench) tenantCall(ctx context.Context, method, url, key string, body []byte, want int, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("X-Api-Key", key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = rsp.Body.Close() }()
	if rsp.StatusCode != want {
		var e bytes.Buffer
		_, _ = e.ReadFrom(rsp.Body)
		return fmt.Errorf("%s %s = %d %s", method, url, rsp.StatusCode, e.String())
	}
	if out != nil {
		return json.NewDecoder(rsp.Body).Decode(out)
	}
	return nil
}
