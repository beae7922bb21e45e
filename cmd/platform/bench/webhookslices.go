package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/bizmsg/platform/platform/webhooks"
)

// webhookSlices is the webhook phase's interleaved measurement: one closed
// loop over the first -tenants count, each tenant with one endpoint at the
// local receiver, cut into -webhook-slices slices of -webhook-slice. In
// half of them (ABBA order: with, without, without, with, ...) the
// endpoints are subscribed to every event type; in the other half only to
// api_key.expiring, which the run never emits, so the send path records no
// event (Emit still reads the subscriptions, as it does with no endpoint).
//
// The paired rounds (webhookRound) compare two runs of -sweep-duration
// back to back, and the machine's speed drifts between them by more than
// the figure's margin (single rounds read 67-145%). Here both conditions
// take turns every slice, so a drift slower than a slice falls on both
// alike, and ABBA order cancels a steady one.
type webhookSlices struct {
	Slices int           `json:"slices"`
	Slice  time.Duration `json:"slice_ns"`
	// With and Without add up the slices of each condition.
	With    sliceTotals `json:"with_events"`
	Without sliceTotals `json:"without_events"`
	// Ratio is With's rate over Without's; CPURatio Without's CPU a
	// message over With's (as webhookRound's).
	Ratio    float64 `json:"ratio"`
	CPURatio float64 `json:"cpu_ratio"`
	// BlockRatios are the ratios of each ABBA block of four slices, to
	// show how far one block's reading strays.
	BlockRatios []float64 `json:"block_ratios"`
	// Webhooks is how many webhook requests the receiver took, Expected
	// how many deliveries the run recorded, DuringRun how many arrived
	// before the loop and its messages' delivery ended, and DrainRate how
	// many a second arrived after.
	Webhooks  int64   `json:"webhooks"`
	Expected  int64   `json:"expected"`
	DuringRun int64   `json:"webhooks_during_run"`
	DrainRate float64 `json:"webhooks_drain_per_s"`
	Complete  bool    `json:"complete"`
}

// sliceTotals is what the slices of one condition add up to.
type sliceTotals struct {
	OK      int64   `json:"ok"`
	Seconds float64 `json:"seconds"`
	// CPUms is the whole machine's CPU time in them, in milliseconds.
	CPUms float64 `json:"cpu_ms"`
}

// rate is OK a second.
func (s sliceTotals) rate() float64 {
	if s.Seconds <= 0 {
		return 0
	}
	return float64(s.OK) / s.Seconds
}

// cpuPerMessage is the CPU milliseconds a message.
func (s sliceTotals) cpuPerMessage() float64 {
	if s.OK <= 0 {
		return 0
	}
	return s.CPUms / float64(s.OK)
}

// sliceWith reports whether slice i of an ABBA sequence has events
// subscribed: with, without, without, with, then again.
func sliceWith(i int) bool {
	return i%4 == 0 || i%4 == 3
}

// sliceMark is a reading at a slice's start (or the loop's end).
type sliceMark struct {
	at  time.Time
	ok  int64
	cpu cpuTimes
}

// addSlices adds up the slices between consecutive marks (marks[i] starts
// slice i; the last mark ends the last slice) into the report's totals and
// block ratios.
func (w *webhookSlices) addSlices(marks []sliceMark) {
	var block [2]sliceTotals // without, with
	for i := range len(marks) - 1 {
		s := sliceTotals{
			OK:      marks[i+1].ok - marks[i].ok,
			Seconds: marks[i+1].at.Sub(marks[i].at).Seconds(),
			CPUms:   (marks[i+1].cpu.work - marks[i].cpu.work) * 1000 / userHZ,
		}
		total, b := &w.Without, &block[0]
		if sliceWith(i) {
			total, b = &w.With, &block[1]
		}
		for _, t := range []*sliceTotals{total, b} {
			t.OK += s.OK
			t.Seconds += s.Seconds
			t.CPUms += s.CPUms
		}
		if i%4 == 3 {
			w.BlockRatios = append(w.BlockRatios, ratio(block[1].rate(), block[0].rate()))
			block = [2]sliceTotals{}
		}
	}
	w.Ratio = ratio(w.With.rate(), w.Without.rate())
	w.CPURatio = ratio(w.Without.cpuPerMessage(), w.With.cpuPerMessage())
}

// webhookSliced runs the interleaved measurement (webhookSlices) over ts
// with the receiver rcv, and waits for every webhook the run recorded.
func (b *sendBench) webhookSliced(ctx context.Context, g *loadGen, addr string, ts []benchTenant, rcv *hookReceiver) (*webhookSlices, error) {
	out := &webhookSlices{Slices: b.cfg.WebhookSlices, Slice: b.cfg.WebhookSlice}
	if err := b.settleWebhooks(ctx, ts); err != nil {
		return nil, err
	}
	ids, err := b.addEndpoints(ctx, addr, ts, rcv.url)
	if err != nil {
		return nil, err
	}
	rcv.reset()
	if err := b.subscribe(ctx, addr, ts, ids, sliceWith(0)); err != nil {
		return nil, err
	}
	var okSoFar atomic.Int64
	shown := b.prog.phase(fmt.Sprintf("webhooks, %d interleaved slices of %s: send closed loop, %d tenant(s)", out.Slices, out.Slice, len(ts)))
	g.progress = func(n int64) {
		raise(&okSoFar, n)
		shown(n)
	}
	type loopEnd struct {
		res loadResult
		err error
	}
	done := make(chan loopEnd, 1)
	start := time.Now()
	marks := []sliceMark{{at: start, cpu: readCPU()}}
	const tag = "bench-hook-sliced"
	go func() {
		res, err := g.closed(ctx, b.cfg.Concurrency, time.Duration(out.Slices)*out.Slice, b.sendRequests(addr, ts, tag), nil)
		done <- loopEnd{res, err}
	}()
	for i := 1; i < out.Slices; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i) * out.Slice)))
		if sliceWith(i) != sliceWith(i-1) {
			if err := b.subscribe(ctx, addr, ts, ids, sliceWith(i)); err != nil {
				<-done
				return nil, err
			}
		}
		// The slice starts once its subscriptions are in place.
		marks = append(marks, sliceMark{at: time.Now(), ok: okSoFar.Load(), cpu: readCPU()})
	}
	end := <-done
	if end.err != nil {
		return nil, end.err
	}
	marks = append(marks, sliceMark{at: time.Now(), ok: end.res.OK, cpu: readCPU()})
	out.addSlices(marks)
	if _, err := b.delivered(ctx, ts, tag, end.res.OK); err != nil {
		return nil, err
	}
	rcv.mark()
	if err := b.awaitOutboxes(ctx, ts); err != nil {
		return nil, err
	}
	for i, t := range ts {
		var n int64
		if err := b.d.Pool.QueryRow(ctx, `SELECT count(*) FROM `+t.Tenant.Table("webhook_deliveries")+` WHERE endpoint_id = $1`, ids[i]).Scan(&n); err != nil {
			return nil, fmt.Errorf("count the sliced run's webhook deliveries: %w", err)
		}
		out.Expected += n
	}
	b.prog.phase(fmt.Sprintf("webhooks of the interleaved slices: %d", out.Expected))
	// A long run's backlog takes longer than -delivery-timeout at the
	// drain rates seen (150-400 a second): allow 100 a second at least.
	wait := max(b.cfg.DeliveryTimeout, time.Duration(out.Expected)*10*time.Millisecond)
	if err := rcv.await(ctx, out.Expected, wait); err != nil {
		return nil, err
	}
	out.Webhooks, _ = rcv.rate()
	out.DuringRun, out.DrainRate = rcv.drain()
	out.Complete = out.Webhooks >= out.Expected
	return out, b.deleteEndpoints(ctx, addr, ts, ids)
}

// raise sets v to n unless it holds more already: the load generator's
// workers report their counts out of order.
func raise(v *atomic.Int64, n int64) {
	for c := v.Load(); n > c; c = v.Load() {
		if v.CompareAndSwap(c, n) {
			return
		}
	}
}

// subscribe sets the event types of endpoints ids (one per tenant of ts):
// every type when with, else only api_key.expiring, which the run never
// emits.
func (b *sendBench) subscribe(ctx context.Context, addr string, ts []benchTenant, ids []int64, with bool) error {
	events := []string{webhooks.EventAPIKeyExpiring}
	if with {
		events = webhooks.EventTypes()
	}
	body, err := json.Marshal(map[string]any{"events": events})
	if err != nil {
		return err
	}
	for i, t := range ts {
		u := "http://" + addr + "/api/v1/webhooks/" + strconv.FormatInt(ids[i], 10)
		if err := b.tenantCall(ctx, http.MethodPatch, u, t.APIKey, body, http.StatusOK, nil); err != nil {
			return fmt.Errorf("subscribe webhook endpoint: %w", err)
		}
	}
	return nil
}
