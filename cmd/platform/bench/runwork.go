package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// runWork is what one webhook run made the service and the database do per
// accepted message, beyond its rate and CPU: where an endpoint's cost
// shows as more work (WAL) or as the same work done less efficiently
// (smaller shared statements, so more statements and commits a message).
type runWork struct {
	// WALBytes is the WAL the server wrote per accepted message, from the
	// start of the run until its messages were sent (cluster-wide, exact:
	// the insert position).
	WALBytes float64 `json:"wal_bytes_per_message"`
	// AcceptBatch and DeliverBatch are the service's mean items per shared
	// statement run of its acceptances and of its deliveries in that span
	// (its batch_size histogram, kinds accept and deliver).
	AcceptBatch  float64 `json:"accept_batch"`
	DeliverBatch float64 `json:"deliver_batch"`
	// OutboxRows is how many webhook outbox rows the service expanded
	// into deliveries in that span (its webhook_outbox_rows_expanded_total):
	// at a closed yield gate one a task, WEBHOOK_BUSY_RATE tasks a second.
	OutboxRows int64 `json:"outbox_rows_expanded"`
}

// workReading is a reading of the counters runWork is made of.
type workReading struct {
	wal int64
	// batches is the service's batch_size _sum and _count by kind.
	batches map[string][2]float64
	// yields is the service's webhook_yields_total, expanded its
	// webhook_outbox_rows_expanded_total.
	yields, expanded int64
}

// readWork reads the server's WAL position and the service's metrics at
// addr.
func (b *sendBench) readWork(ctx context.Context, addr string) (workReading, error) {
	w := workReading{batches: map[string][2]float64{}}
	if err := b.d.Pool.QueryRow(ctx, `SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint`).Scan(&w.wal); err != nil {
		return w, fmt.Errorf("read the WAL position: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return w, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return w, fmt.Errorf("read the service's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	yields := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch name {
		case "webhook_yields_total":
			w.yields, yields = int64(f), true
		case "webhook_outbox_rows_expanded_total":
			w.expanded = int64(f)
		default:
			for i, series := range []string{"batch_size_sum", "batch_size_count"} {
				if kind, ok := kindOf(name, series); ok {
					s := w.batches[kind]
					s[i] = f
					w.batches[kind] = s
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return w, fmt.Errorf("read the service's metrics: %w", err)
	}
	if !yields {
		return w, fmt.Errorf("the service's metrics have no webhook_yields_total")
	}
	return w, nil
}

// kindOf returns the kind label of a sample name of series, `series{kind="k"}`.
func kindOf(name, series string) (string, bool) {
	rest, ok := strings.CutPrefix(name, series+`{kind="`)
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, `"}`)
}

// workSince is the work per message of n accepted messages between two
// readings.
func workSince(before, after workReading, n int64) runWork {
	if n <= 0 {
		return runWork{}
	}
	mean := func(kind string) float64 {
		b, a := before.batches[kind], after.batches[kind]
		if a[1] <= b[1] {
			return 0
		}
		return (a[0] - b[0]) / (a[1] - b[1])
	}
	return runWork{
		WALBytes:     float64(after.wal-before.wal) / float64(n),
		AcceptBatch:  mean("accept"),
		DeliverBatch: mean("deliver"),
		OutboxRows:   after.expanded - before.expanded,
	}
}

// measuredRun is one run of a webhook round: its closed loop, and what the
// machine used per accepted message from the run's start until its messages
// were sent (not while the delivery figures are computed after, when the
// service's webhook work is no longer held back by the send path).
type measuredRun struct {
	res loadResult
	// cpu is the machine's CPU milliseconds a message, steal the percent
	// of its CPU time stolen.
	cpu, steal float64
	work       runWork
	// start is the reading at the run's start.
	start workReading
}

// webhookRun runs the service's closed loop over ts for -sweep-duration,
// tagging its messages tag, measures it until its messages are sent, calls
// atSent then (when not nil), and checks their delivery (delivered).
func (b *sendBench) webhookRun(ctx context.Context, g *loadGen, addr string, ts []benchTenant, label, tag string, atSent func()) (measuredRun, error) {
	var m measuredRun
	var err error
	if m.start, err = b.readWork(ctx, addr); err != nil {
		return m, err
	}
	cpu := readCPU()
	g.progress = b.prog.phase(fmt.Sprintf("%ssend closed loop, %d tenant(s)", label, len(ts)))
	if m.res, err = g.closed(ctx, b.cfg.Concurrency, b.cfg.SweepDuration, b.sendRequests(addr, ts, tag), nil); err != nil {
		return m, err
	}
	if err := b.awaitSent(ctx, ts, tag, m.res.OK); err != nil {
		return m, err
	}
	m.cpu, m.steal = cpuPerItem(cpu, m.res.OK), stealSince(cpu)
	end, err := b.readWork(ctx, addr)
	if err != nil {
		return m, err
	}
	m.work = workSince(m.start, end, m.res.OK)
	if atSent != nil {
		atSent()
	}
	_, err = b.delivered(ctx, ts, tag, m.res.OK)
	return m, err
}
