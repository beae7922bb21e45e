package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/dbtest"
)

// `platform bench send`, shortened: every phase runs (the three ceilings,
// the closed and open loops, delivery, /me, the tenant sweep and the worker
// drain), every accepted message is sent exactly once, and the table and the
// JSON report carry positive figures. The figures themselves are not judged
// here (they belong to docs/performance.md); that the command works is.
func TestBenchSendCommand(t *testing.T) {
	t.Parallel()
	name := fmt.Sprintf("bizmsg_bench_test_%d", time.Now().UnixNano())
	out := filepath.Join(t.TempDir(), "bench.json")
	stdout, _ := runBench(t, "send",
		"-tenants", "1,3", "-senders", "2", "-recipients", "20", "-concurrency", "4",
		"-duration", "1s", "-sweep-duration", "1s", "-sweep-rounds", "2", "-pair-rounds", "2", "-backlog", "200",
		"-conversation", "30", "-conversation-rate", "20", "-conversation-burst", "10",
		"-log-level", "warn", "-db", name, "-out", out)
	for _, want := range []string{"ceiling (a) raw Postgres", "ceiling (b) River alone", "ceiling (c) bare gin",
		"accepted sends/s", "exactly once", "service peak RSS", "tenants sweep", "target", "max_files_per_process", "autovacuum", "ceiling (a) raw Postgres over as many", "checkpoint(s) started",
		"accepted sends/s vs ceiling (a), paired rounds", "same, paired rounds (median)", "kB a message; batches of",
		"delivery drain, 1 worker process (spread)", "delivery drain, 3 worker processes (spread)", "3 workers vs 1 worker (goal >= 90%)",
		"delivery drain, 3 workers vs 1 worker (spread), %", "delivery drain, 3 workers (conversations)", "3 workers vs 1 worker (conversations)",
		"deep conversation, 3 workers (1 sender, 1 recipient)", "throttle 20/s, burst 10: at least 1.00 s", "in acceptance order (network.messages by id)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	type load struct {
		OK   int64   `json:"ok"`
		Rate float64 `json:"rate"`
		P99  float64 `json:"p99_ms"`
	}
	type wal struct {
		Bytes float64 `json:"bytes"`
	}
	type work struct {
		WAL          float64 `json:"wal_bytes_per_message"`
		AcceptBatch  float64 `json:"accept_batch"`
		DeliverBatch float64 `json:"deliver_batch"`
	}
	type delivery struct {
		Accepted    int64 `json:"accepted"`
		Sent        int64 `json:"sent"`
		NetworkRows int64 `json:"network_rows"`
		ExactlyOnce bool  `json:"exactly_once"`
	}
	var rep struct {
		CeilingPostgres load `json:"ceiling_postgres"`
		CeilingWAL      wal  `json:"ceiling_postgres_wal"`
		CeilingSweep    []struct {
			Tenants int     `json:"tenants"`
			Spread  load    `json:"spread"`
			Ratio   float64 `json:"ratio_to_first"`
			Rounds  []struct {
				Base      load    `json:"base"`
				Spread    load    `json:"spread"`
				Ratio     float64 `json:"ratio"`
				BaseWAL   wal     `json:"base_wal"`
				SpreadWAL wal     `json:"spread_wal"`
			} `json:"rounds"`
		} `json:"ceiling_postgres_sweep"`
		CeilingRiver struct {
			Jobs int64   `json:"jobs"`
			Rate float64 `json:"rate"`
		} `json:"ceiling_river"`
		CeilingGin   load     `json:"ceiling_bare_gin"`
		Send         load     `json:"send_closed"`
		Delivery     delivery `json:"delivery"`
		Open         load     `json:"send_open"`
		OpenDelivery delivery `json:"send_open_delivery"`
		Me           load     `json:"me"`
		Paired       []struct {
			Ceiling      load     `json:"ceiling"`
			Send         load     `json:"send"`
			Delivery     delivery `json:"delivery"`
			CeilingFirst bool     `json:"ceiling_first"`
			Ratio        float64  `json:"ratio"`
		} `json:"paired"`
		PairedRatio float64 `json:"paired_ratio"`
		Sweep       []struct {
			Tenants  int      `json:"tenants"`
			Send     load     `json:"send"`
			Delivery delivery `json:"delivery"`
			Ratio    float64  `json:"ratio_to_first"`
			Me       load     `json:"me"`
			MeRatio  float64  `json:"me_ratio_to_first"`
			Rounds   []struct {
				Base         load     `json:"base"`
				BaseDelivery delivery `json:"base_delivery"`
				Send         load     `json:"send"`
				Delivery     delivery `json:"delivery"`
				Ratio        float64  `json:"ratio"`
				MeBase       load     `json:"me_base"`
				Me           load     `json:"me"`
				MeRatio      float64  `json:"me_ratio"`
			} `json:"rounds"`
			Memory struct {
				ServicePeak  int64  `json:"service_peak_rss_bytes"`
				Backends     int    `json:"backends"`
				BackendsAnon int64  `json:"backends_anon_bytes"`
				BackendsRSS  int64  `json:"backends_rss_bytes"`
				Error        string `json:"error"`
			} `json:"memory"`
		} `json:"sweep"`
		Webhooks []struct {
			With      load  `json:"with_endpoint"`
			Without   load  `json:"without_endpoint"`
			Webhooks  int64 `json:"webhooks"`
			DuringRun int64 `json:"webhooks_during_run"`
			Yields    int64 `json:"webhook_yields"`
			Complete  bool  `json:"complete"`
			// Milliseconds of the machine's CPU per accepted message.
			CPUWith    float64 `json:"cpu_ms_per_message_with"`
			CPUWithout float64 `json:"cpu_ms_per_message_without"`
			CPURatio   float64 `json:"cpu_ratio"`
			// WAL and shared statements per accepted message.
			WorkWith    work `json:"work_with"`
			WorkWithout work `json:"work_without"`
		} `json:"webhooks"`
		WebhookSlices *struct {
			Slices int `json:"slices"`
			With   struct {
				OK int64 `json:"ok"`
			} `json:"with_events"`
			Without struct {
				OK int64 `json:"ok"`
			} `json:"without_events"`
			Ratio       float64   `json:"ratio"`
			BlockRatios []float64 `json:"block_ratios"`
			Webhooks    int64     `json:"webhooks"`
			Expected    int64     `json:"expected"`
			Complete    bool      `json:"complete"`
		} `json:"webhook_slices"`
		PeakRSS int64 `json:"service_peak_rss_bytes"`
		Drain   struct {
			Rate float64 `json:"rate"`
		} `json:"delivery_drain"`
		DrainCheck   delivery `json:"delivery_drain_check"`
		DrainWorkers *struct {
			Workers            int           `json:"workers"`
			One                benchDrainRun `json:"one_worker_spread"`
			Spread             benchDrainRun `json:"spread"`
			Conversations      benchDrainRun `json:"conversations"`
			Ratio              float64       `json:"ratio_to_one_worker"`
			ConversationsRatio float64       `json:"conversations_ratio_to_one_worker"`
			Conversation       *struct {
				Messages int64 `json:"messages"`
				Drain    struct {
					Jobs    int64   `json:"jobs"`
					Elapsed int64   `json:"elapsed_ns"`
					Rate    float64 `json:"rate"`
				} `json:"drain"`
				Minimum     int64    `json:"throttle_minimum_ns"`
				Check       delivery `json:"check"`
				InOrder     bool     `json:"in_acceptance_order"`
				NetworkRows int64    `json:"network_rows"`
			} `json:"conversation"`
		} `json:"delivery_drain_workers"`
		Targets []struct {
			Name string `json:"name"`
		} `json:"targets"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	for name, l := range map[string]load{"ceiling (a)": rep.CeilingPostgres, "ceiling (c)": rep.CeilingGin,
		"closed send": rep.Send, "open send": rep.Open, "/me": rep.Me} {
		if l.OK == 0 || l.Rate <= 0 || l.P99 <= 0 {
			t.Errorf("%s: %+v, want positive figures", name, l)
		}
	}
	if len(rep.Webhooks) != 3 {
		t.Errorf("%d webhook rounds, want 3 (the default)", len(rep.Webhooks))
	}
	for i, w := range rep.Webhooks {
		if !w.Complete || w.Webhooks != 2*w.With.OK || w.With.OK == 0 || w.Without.OK == 0 ||
			w.DuringRun < 0 || w.DuringRun > w.Webhooks || w.Yields < 0 ||
			w.CPUWith <= 0 || w.CPUWithout <= 0 || w.CPURatio != w.CPUWithout/w.CPUWith ||
			w.WorkWith.WAL <= 0 || w.WorkWithout.WAL <= 0 || w.WorkWith.AcceptBatch < 1 || w.WorkWithout.AcceptBatch < 1 ||
			w.WorkWith.DeliverBatch < 1 || w.WorkWithout.DeliverBatch < 1 {
			t.Errorf("webhook round %d: %+v, want both runs to send and two webhooks per message sent with the endpoint", i+1, w)
		}
	}
	// The interleaved slices (20 by default): both conditions sent, the
	// with-slices recorded webhooks (two per message sent while
	// subscribed, at least one slice's worth), and every one arrived.
	if ws := rep.WebhookSlices; ws == nil || ws.Slices != 20 || ws.With.OK == 0 || ws.Without.OK == 0 || ws.Ratio <= 0 ||
		len(ws.BlockRatios) != 5 || !ws.Complete || ws.Expected == 0 || ws.Webhooks != ws.Expected || ws.Expected%2 != 0 {
		t.Errorf("webhook slices: %+v", ws)
	}
	if rep.CeilingRiver.Jobs != 200 || rep.CeilingRiver.Rate <= 0 {
		t.Errorf("ceiling (b): %+v", rep.CeilingRiver)
	}
	checks := map[string]delivery{"closed": rep.Delivery, "open": rep.OpenDelivery, "drain": rep.DrainCheck}
	// The drains over worker processes (the default -drain-workers, 3):
	// the backlog to one recipient per message by one worker and by three,
	// the ratio of their rates; the backlog over -recipients by three,
	// against the 1-worker drain; then the deep conversation, at its
	// throttle, in acceptance order. The ratios' targets are not judged
	// here.
	if w := rep.DrainWorkers; w == nil || w.Workers != 3 || !w.One.valid(1, 200) || !w.Spread.valid(3, 200) || !w.Conversations.valid(3, 20) ||
		math.Abs(w.Ratio-w.Spread.Drain.Rate/w.One.Drain.Rate) > 1e-9 ||
		math.Abs(w.ConversationsRatio-w.Conversations.Drain.Rate/rep.Drain.Rate) > 1e-9 {
		t.Errorf("drain over workers: %+v (1 worker: %v /s)", w, rep.Drain.Rate)
	} else {
		for name, r := range map[string]benchDrainRun{"drain by one worker, spread": w.One,
			"drain over workers, spread": w.Spread, "drain over workers, conversations": w.Conversations} {
			checks[name] = delivery(r.Check)
		}
		c := w.Conversation
		// 30 messages at 20/s, burst 10: at least (30-10)/20 = 1 s.
		if c == nil || c.Messages != 30 || c.Drain.Jobs != 30 || c.Minimum != int64(time.Second) ||
			c.Drain.Elapsed < c.Minimum*8/10 || c.Drain.Rate <= 0 || !c.InOrder || c.NetworkRows != 30 {
			t.Errorf("deep conversation: %+v", c)
		} else {
			checks["deep conversation"] = c.Check
		}
	}
	for i, p := range rep.Paired {
		checks[fmt.Sprintf("paired round %d", i)] = p.Delivery
	}
	for _, s := range rep.Sweep {
		checks[fmt.Sprintf("sweep %d", s.Tenants)] = s.Delivery
		for i, r := range s.Rounds {
			checks[fmt.Sprintf("sweep %d round %d", s.Tenants, i)] = r.Delivery
			checks[fmt.Sprintf("sweep %d round %d base", s.Tenants, i)] = r.BaseDelivery
		}
	}
	for name, d := range checks {
		if !d.ExactlyOnce || d.Accepted == 0 || d.Sent != d.Accepted || d.NetworkRows != d.Accepted {
			t.Errorf("%s delivery: %+v, want every accepted message sent exactly once", name, d)
		}
	}
	if len(rep.Sweep) != 2 || rep.Sweep[1].Tenants != 3 || len(rep.Sweep[1].Rounds) != 2 {
		t.Fatalf("sweep = %+v, want 1 and 3 tenants, the second in 2 rounds", rep.Sweep)
	}
	// Memory after each entry: the service's peak, and its backends
	// (found by application_name; this machine runs the server).
	for _, s := range rep.Sweep {
		m := s.Memory
		if m.Error != "" || m.ServicePeak <= 0 || m.Backends < 1 || m.BackendsAnon <= 0 || m.BackendsRSS < m.BackendsAnon {
			t.Errorf("sweep %d memory: %+v, want the service's peak and its backends' memory", s.Tenants, m)
		}
	}
	if !strings.Contains(stdout, "memory after it") {
		t.Errorf("table lacks the memory line:\n%s", stdout)
	}
	// The entry's ratio is one of its rounds' (the median, the lower middle
	// of two), each the round's sends/s over its base's.
	rounds := rep.Sweep[1].Rounds
	for i, r := range rounds {
		if r.Base.Rate <= 0 || r.Send.Rate <= 0 || math.Abs(r.Ratio-r.Send.Rate/r.Base.Rate) > 1e-9 {
			t.Errorf("round %d: %+v", i, r)
		}
	}
	if want := math.Min(rounds[0].Ratio, rounds[1].Ratio); rep.Sweep[1].Ratio != want {
		t.Errorf("sweep ratio %v, want the lower of the rounds' %v", rep.Sweep[1].Ratio, want)
	}
	// GET /me is swept the same way, its median taken on its own ratios.
	for i, r := range rounds {
		if r.MeBase.OK == 0 || r.Me.OK == 0 || math.Abs(r.MeRatio-r.Me.Rate/r.MeBase.Rate) > 1e-9 {
			t.Errorf("round %d /me: base %+v, spread %+v, ratio %v", i, r.MeBase, r.Me, r.MeRatio)
		}
	}
	if want := math.Min(rounds[0].MeRatio, rounds[1].MeRatio); rep.Sweep[1].MeRatio != want || rep.Sweep[0].MeRatio != 1 {
		t.Errorf("/me sweep ratios %v, %v, want 1 and the lower of the rounds' %v", rep.Sweep[0].MeRatio, rep.Sweep[1].MeRatio, want)
	}
	// Ceiling (a) over the sweep's second count, measured the same way, with
	// the WAL each run wrote (a message row and a job: some hundred bytes).
	if len(rep.CeilingSweep) != 1 || rep.CeilingSweep[0].Tenants != 3 || len(rep.CeilingSweep[0].Rounds) != 2 {
		t.Fatalf("ceiling sweep = %+v, want 3 tenants in 2 rounds", rep.CeilingSweep)
	}
	if rep.CeilingWAL.Bytes < 100 {
		t.Errorf("ceiling (a) WAL per transaction: %+v", rep.CeilingWAL)
	}
	cr := rep.CeilingSweep[0].Rounds
	for i, r := range cr {
		if r.Base.OK == 0 || r.Spread.OK == 0 || math.Abs(r.Ratio-r.Spread.Rate/r.Base.Rate) > 1e-9 ||
			r.BaseWAL.Bytes < 100 || r.SpreadWAL.Bytes < 100 {
			t.Errorf("ceiling round %d: %+v", i, r)
		}
	}
	if want := math.Min(cr[0].Ratio, cr[1].Ratio); rep.CeilingSweep[0].Ratio != want {
		t.Errorf("ceiling sweep ratio %v, want the lower of the rounds' %v", rep.CeilingSweep[0].Ratio, want)
	}
	// The paired rounds: the service against ceiling (a) back to back, in
	// alternating order, their median ratio the target's second figure.
	if len(rep.Paired) != 2 {
		t.Fatalf("paired rounds = %+v, want 2", rep.Paired)
	}
	for i, r := range rep.Paired {
		if r.Ceiling.OK == 0 || r.Send.OK == 0 || math.Abs(r.Ratio-r.Send.Rate/r.Ceiling.Rate) > 1e-9 || r.CeilingFirst != (i == 0) {
			t.Errorf("paired round %d: %+v", i, r)
		}
	}
	if want := math.Min(rep.Paired[0].Ratio, rep.Paired[1].Ratio); rep.PairedRatio != want {
		t.Errorf("paired ratio %v, want the lower of the rounds' %v", rep.PairedRatio, want)
	}
	if rep.PeakRSS <= 0 || len(rep.Targets) == 0 {
		t.Errorf("peak RSS %d, %d targets", rep.PeakRSS, len(rep.Targets))
	}
}

// `platform bench scheduled`, shortened: a few messages due at one instant
// are released by one worker process, exactly once, every figure is
// printed, and the command ends. The figures belong to docs/design.md,
// §Scheduled sends.
func TestBenchScheduledCommand(t *testing.T) {
	t.Parallel()
	name := fmt.Sprintf("bizmsg_bench_sched_test_%d", time.Now().UnixNano())
	stdout, _ := runBench(t, "scheduled",
		"-messages", "60", "-tenants", "2", "-senders", "2", "-recipients", "20", "-concurrency", "4",
		"-workers", "1", "-lead", "15s", "-timeout", "2m", "-db", name)
	for _, want := range []string{"schedule 60 messages", "release latency after send_at", "release rate",
		"ok: 60 messages, 60 released (0 before send_at), 60 counted", "rescuer's due scan",
		"sweep alternative at 10,000 tenants"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
}

// runBench runs `platform bench <args>` (the built binary) on the test
// server and returns its stdout and stderr, failing the test with both
// benchDrainRun is one drain of bench send's report over worker processes.
type benchDrainRun struct {
	Workers    int `json:"workers"`
	Recipients int `json:"recipients"`
	Drain      struct {
		Jobs int64   `json:"jobs"`
		Rate float64 `json:"rate"`
	} `json:"drain"`
	Check struct {
		Accepted    int64 `json:"accepted"`
		Sent        int64 `json:"sent"`
		NetworkRows int64 `json:"network_rows"`
		ExactlyOnce bool  `json:"exactly_once"`
	} `json:"check"`
	Delivering int     `json:"workers_delivering"`
	CPU        float64 `json:"cpu_ms_per_message"`
}

// valid says whether the run is by the given workers, to the given
// recipients, with positive figures and at least one worker delivering.
func (r benchDrainRun) valid(workers, recipients int) bool {
	return r.Workers == workers && r.Recipients == recipients && r.Drain.Jobs >= 200 && r.Drain.Rate > 0 &&
		r.Delivering >= 1 && r.Delivering <= workers && r.CPU > 0
}

// when it exits non-zero.
func runBench(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), platformBinary(t), append([]string{"bench"}, args...)...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbtest.ServerURL(t))
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench %s: %v\nstdout:\n%s\nstderr:\n%s", args[0], err, out.String(), errs.String())
	}
	return out.String(), errs.String()
}

// `platform bench tenants`, shortened: it provisions the tenants (two at
// once), times the start-up check of server settings, migrates
// them (a no-op), then migrates every schema with a column and an index
// of its own, showing progress, and every schema is migrated.
func TestBenchTenantsCommand(t *testing.T) {
	t.Parallel()
	name := fmt.Sprintf("bizmsg_bench_test_%d", time.Now().UnixNano())
	stdout, stderr := runBench(t, "tenants", "-count", "3", "-provision-concurrency", "2", "-db", name)
	for _, want := range []string{"tenants provisioned (2 at once)              3 in", "(3 current, 0 migrated)",
		"start-up check of server settings", "(3 tenants, ", "migrate 3 tenants: a column and an index", "(3 migrated, 0 failed;"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "provisioned 3/3 tenants") || !strings.Contains(stderr, "migrated 3/3 tenant schemas") {
		t.Errorf("no progress shown:\n%s", stderr)
	}
}
