package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// loadRequest builds the i-th request of a load run. It must be safe for
// concurrent use; i counts requests across all workers.
type loadRequest func(i int64) (*http.Request, error)

// loadResult is what one load run measured.
type loadResult struct {
	// Mode is "closed" (C workers, each sending as soon as its previous
	// request answered) or "open" (requests scheduled at a fixed rate).
	Mode        string  `json:"mode"`
	Concurrency int     `json:"concurrency"`
	TargetRate  float64 `json:"target_rate,omitempty"`
	// OK counts answers with the expected status; Errors the others
	// (transport errors included); Missed the open-loop requests that could
	// not be started because every worker was busy.
	OK      int64         `json:"ok"`
	Errors  int64         `json:"errors"`
	Missed  int64         `json:"missed,omitempty"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Rate is OK answers per second.
	Rate float64 `json:"rate"`
	// Latency percentiles of OK answers in milliseconds. In open loop they
	// are measured from the request's scheduled time, so a stall delays the
	// clock of every request queued behind it (no coordinated omission).
	P50 float64 `json:"p50_ms"`
	P95 float64 `json:"p95_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
	// CPUBusy is the whole machine's CPU use during the run, in percent.
	CPUBusy float64 `json:"machine_cpu_busy_pct"`
	// CPUPerOK is the machine's CPU time (its processes and the kernel)
	// during the run per OK answer, in milliseconds: the figure to compare
	// two builds by in alternated runs, since it holds while the rate moves
	// with what else the machine does.
	CPUPerOK float64 `json:"machine_cpu_ms_per_ok"`
	// ScopeCPUPerOK is the CPU time of the service process and of the
	// Postgres backends of its database (loadGen.scope) per OK answer, in
	// milliseconds: the same comparison, free of the rest of the machine.
	ScopeCPUPerOK float64 `json:"service_db_cpu_ms_per_ok,omitempty"`
	// FirstError is the first unexpected answer or transport error.
	FirstError string `json:"first_error,omitempty"`
}

// loadGen drives HTTP requests over a keep-alive client sized for the
// concurrency, so connection setup is not part of what is measured.
type loadGen struct {
	client   *http.Client
	expect   int
	progress func(done int64)
	// scope, when set, reads the CPU time (clock ticks) of what a run
	// measures: the service and its database (scopeCPU).
	scope func() cpuSnapshot
}

func newLoadGen(concurrency, expect int) *loadGen {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        concurrency * 2,
		MaxIdleConnsPerHost: concurrency * 2,
		MaxConnsPerHost:     0,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &loadGen{client: &http.Client{Transport: tr, Timeout: 30 * time.Second}, expect: expect}
}

func (g *loadGen) close() { g.client.CloseIdleConnections() }

// do sends one request and reports whether it got the expected status.
func (g *loadGen) do(req *http.Request) (bool, string) {
	resp, err := g.client.Do(req)
	if err != nil {
		return false, err.Error()
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != g.expect {
		return false, fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(body[:min(len(body), 300)]))
	}
	return true, ""
}

// recorder collects latencies and counts from many workers.
type recorder struct {
	ok, errs, missed atomic.Int64
	mu               sync.Mutex
	lat              []time.Duration
	firstErr         string
}

func (r *recorder) record(ok bool, msg string, d time.Duration) {
	if ok {
		r.ok.Add(1)
		r.mu.Lock()
		r.lat = append(r.lat, d)
		r.mu.Unlock()
		return
	}
	r.errs.Add(1)
	r.mu.Lock()
	if r.firstErr == "" {
		r.firstErr = msg
	}
	r.mu.Unlock()
}

func (r *recorder) result(mode string, c int, rate float64, elapsed time.Duration) loadResult {
	res := loadResult{Mode: mode, Concurrency: c, TargetRate: rate, OK: r.ok.Load(), Errors: r.errs.Load(),
		Missed: r.missed.Load(), Elapsed: elapsed, FirstError: r.firstErr}
	res.Rate = float64(res.OK) / elapsed.Seconds()
	slices.Sort(r.lat)
	res.P50, res.P95, res.P99 = pctMS(r.lat, 0.50), pctMS(r.lat, 0.95), pctMS(r.lat, 0.99)
	if n := len(r.lat); n > 0 {
		res.Max = ms(r.lat[n-1])
	}
	return res
}

func pctMS(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return ms(sorted[max(i, 0)])
}

func ms(d time.Duration) float64 { return math.Round(float64(d.Microseconds())/10) / 100 }

// closed runs c workers for d, each sending its next request as soon as the
// previous one answered. stop, when not nil, ends the run early once it
// reports true (checked after each answer).
func (g *loadGen) closed(ctx context.Context, c int, d time.Duration, build loadRequest, stop func(ok int64) bool) (loadResult, error) {
	var before cpuSnapshot
	if g.scope != nil {
		before = g.scope()
	}
	res, err := closedLoop(ctx, c, d, g.progress, stop, func(ctx context.Context, i int64) (bool, string, error) {
		req, err := build(i)
		if err != nil {
			return false, "", err
		}
		ok, msg := g.do(req.WithContext(context.WithoutCancel(ctx)))
		return ok, msg, nil
	})
	if g.scope != nil && res.OK > 0 {
		res.ScopeCPUPerOK = g.scope().since(before) * 1000 / userHZ / float64(res.OK)
	}
	return res, err
}

// closedLoop runs c workers for d, each calling op with the next sequence
// number as soon as its previous call returned, and records every call's
// outcome (ok, else msg) and latency. An in-flight call is not cancelled
// when d ends (op gets ctx, which ends with the run: use it only to stop
// starting work). An error from op (it could not even try) ends the run and
// is returned; stop, when not nil, ends the run early once it reports true
// for the count of successful calls; progress, when not nil, gets that count
// after every call.
func closedLoop(ctx context.Context, c int, d time.Duration, progress func(ok int64), stop func(ok int64) bool,
	op func(ctx context.Context, i int64) (ok bool, msg string, err error)) (loadResult, error) {
	var (
		rec  recorder
		seq  atomic.Int64
		wg   sync.WaitGroup
		oerr atomic.Value
	)
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	cpu := readCPU()
	start := time.Now()
	for range c {
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				ok, msg, err := op(ctx, seq.Add(1)-1)
				if err != nil {
					oerr.CompareAndSwap(nil, err)
					cancel()
					return
				}
				rec.record(ok, msg, time.Since(t0))
				if progress != nil {
					progress(rec.ok.Load())
				}
				if stop != nil && stop(rec.ok.Load()) {
					cancel()
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err, _ := oerr.Load().(error); err != nil {
		return loadResult{}, err
	}
	res := rec.result("closed", c, 0, elapsed)
	res.CPUBusy = busySince(cpu)
	res.CPUPerOK = cpuPerItem(cpu, res.OK)
	return res, nil
}

// open sends requests at a fixed rate for d, each at its scheduled time on
// one of at most c in-flight workers, and measures latency from the
// scheduled time. A request whose time comes while c are in flight waits
// for a free worker (its wait counts in its latency).
func (g *loadGen) open(ctx context.Context, c int, rate float64, d time.Duration, build loadRequest) (loadResult, error) {
	var (
		rec recorder
		wg  sync.WaitGroup
	)
	type job struct {
		at  time.Time
		req *http.Request
	}
	jobs := make(chan job, int(rate*d.Seconds())+1)
	for range c {
		wg.Go(func() {
			for j := range jobs {
				if wait := time.Until(j.at); wait > 0 {
					time.Sleep(wait)
				}
				ok, msg := g.do(j.req)
				rec.record(ok, msg, time.Since(j.at))
				if g.progress != nil {
					g.progress(rec.ok.Load())
				}
			}
		})
	}
	interval := time.Duration(float64(time.Second) / rate)
	cpu := readCPU()
	start := time.Now()
	n := int64(rate * d.Seconds())
	var err error
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		req, berr := build(i)
		if berr != nil {
			err = berr
			break
		}
		if ctx.Err() != nil {
			err = ctx.Err()
			break
		}
		if wait := time.Until(at); wait > 0 {
			time.Sleep(wait)
		}
		jobs <- job{at: at, req: req}
	}
	close(jobs)
	wg.Wait()
	if err != nil {
		return loadResult{}, err
	}
	res := rec.result("open", c, rate, time.Since(start))
	res.CPUBusy = busySince(cpu)
	return res, nil
}
