package bench

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBenchCommandErrors covers what platform bench refuses before any
// database work: the usage, unknown benchmarks and invalid flags.
func TestBenchCommandErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args       []string
		wantErr    string // "" for flag.ErrHelp
		wantStderr string
	}{
		{nil, "", "Usage: platform bench <benchmark>"},
		{[]string{"bogus"}, `unknown benchmark "bogus"`, "Usage: platform bench <benchmark>"},
		{[]string{"send", "-h"}, "", "Usage: platform bench send [flags]"},
		{[]string{"send", "-tenants", "1,0"}, `-tenants: "0" is not a positive integer`, ""},
		{[]string{"send", "-senders", "101"}, "-senders must be from 1 to 100", ""},
		{[]string{"send", "-sweep-rounds", "0"}, "-sweep-rounds must be at least 1", ""},
		{[]string{"send", "-webhook-slices", "6"}, "-webhook-slices must be a multiple of 4", ""},
		{[]string{"send", "-webhook-slice", "10ms"}, "-webhook-slice must be at least 100ms", ""},
		{[]string{"send", "-citus", "-citus-script", "/nonexistent/citus-cluster"}, "-citus needs scripts/citus-cluster", ""},
		{[]string{"river-node", "-h"}, "", "-move-jobs"},
		{[]string{"river-node", "-rounds", "0"}, "-rounds and -move-jobs must be positive", ""},
		{[]string{"river-node", "-citus-script", "/nonexistent/citus-cluster"}, "needs scripts/citus-cluster", ""},
		{[]string{"tenants", "-h"}, "", "-count"},
		{[]string{"tenants", "-count", "0"}, "-count must be at least 1", ""},
		{[]string{"bare-gin", "-port", "1"}, "flag provided but not defined", ""},
	} {
		var stdout, stderr bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := Main(ctx, tc.args, &stdout, &stderr)
		cancel()
		switch {
		case tc.wantErr == "" && !errors.Is(err, flag.ErrHelp):
			t.Errorf("%v: err %v, want help", tc.args, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.wantErr)
		}
		if !strings.Contains(stderr.String(), tc.wantStderr) {
			t.Errorf("%v: stderr %q, want it to contain %q", tc.args, stderr.String(), tc.wantStderr)
		}
		if stdout.Len() > 0 {
			t.Errorf("%v: stdout %q, want nothing", tc.args, stdout.String())
		}
	}
}

func TestParseTenantList(t *testing.T) {
	t.Parallel()
	got, err := parseTenantList("1, 100,1000")
	if err != nil || len(got) != 3 || got[0] != 1 || got[1] != 100 || got[2] != 1000 {
		t.Fatalf("parseTenantList = %v, %v; want [1 100 1000]", got, err)
	}
	for _, bad := range []string{"", "1,,2", "x", "-1"} {
		if _, err := parseTenantList(bad); err == nil {
			t.Errorf("parseTenantList(%q): no error", bad)
		}
	}
}

// procStatus reads this process's fields in bytes and names a missing one.
func TestProcStatus(t *testing.T) {
	t.Parallel()
	st, err := procStatus(os.Getpid(), "VmHWM", "RssAnon", "VmRSS")
	if err != nil {
		t.Fatal(err)
	}
	if st["VmHWM"] < st["VmRSS"] || st["RssAnon"] <= 0 || st["VmRSS"] < st["RssAnon"] || st["VmRSS"]%1024 != 0 {
		t.Errorf("procStatus = %v, want VmHWM >= VmRSS >= RssAnon > 0, in bytes", st)
	}
	if _, err := procStatus(os.Getpid(), "NoSuchField"); err == nil || !strings.Contains(err.Error(), "NoSuchField") {
		t.Errorf("procStatus(missing field) error = %v, want it named", err)
	}
}

// The bench waits for a stopping child as long as the child's own
// shutdown bound allows, and a little more.
func TestStopWait(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  []string
		want time.Duration
	}{
		{nil, 35 * time.Second},
		{[]string{"PATH=/bin", "SHUTDOWN_TIMEOUT=2m"}, 125 * time.Second},
		{[]string{"SHUTDOWN_TIMEOUT=2m", "SHUTDOWN_TIMEOUT=10s"}, 15 * time.Second},
		{[]string{"SHUTDOWN_TIMEOUT=soon"}, 35 * time.Second},
		{[]string{"SHUTDOWN_TIMEOUT=-1s"}, 35 * time.Second},
		{[]string{"MY_SHUTDOWN_TIMEOUT=2m"}, 35 * time.Second},
	} {
		if got := stopWait(tc.env); got != tc.want {
			t.Errorf("stopWait(%q) = %s, want %s", tc.env, got, tc.want)
		}
	}
}

// Interleaved slices go with, without, without, with (ABBA), and add up
// per condition: the ratio is the with-slices' rate over the others', the
// CPU ratio the others' CPU a message over the with-slices', one ratio per
// block of four.
func TestWebhookSlicesAddUp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// per slice: messages accepted and CPU ticks, each slice 1 s.
		ok, ticks            []int64
		wantRatio, wantCPU   float64
		wantBlocks           []float64
		wantWithOK, wantOKWo int64
	}{
		{"equal", []int64{100, 100, 100, 100}, []int64{50, 50, 50, 50}, 1, 1, []float64{1}, 200, 200},
		{"with slower", []int64{90, 100, 100, 90, 90, 100, 100, 90}, []int64{50, 50, 50, 50, 50, 50, 50, 50},
			0.9, 0.9, []float64{0.9, 0.9}, 360, 400},
		{"drift cancels", []int64{100, 110, 120, 130}, []int64{50, 50, 50, 50}, 1, 1, []float64{1}, 230, 230},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
			marks := []sliceMark{{at: start}}
			for i := range tt.ok {
				prev := marks[i]
				marks = append(marks, sliceMark{at: prev.at.Add(time.Second), ok: prev.ok + tt.ok[i],
					cpu: cpuTimes{work: prev.cpu.work + float64(tt.ticks[i])}})
			}
			var w webhookSlices
			w.addSlices(marks)
			near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
			if !near(w.Ratio, tt.wantRatio) || !near(w.CPURatio, tt.wantCPU) || w.With.OK != tt.wantWithOK || w.Without.OK != tt.wantOKWo {
				t.Fatalf("ratio %v cpu %v, with %+v without %+v", w.Ratio, w.CPURatio, w.With, w.Without)
			}
			if len(w.BlockRatios) != len(tt.wantBlocks) {
				t.Fatalf("blocks %v, want %v", w.BlockRatios, tt.wantBlocks)
			}
			for i := range tt.wantBlocks {
				if !near(w.BlockRatios[i], tt.wantBlocks[i]) {
					t.Fatalf("blocks %v, want %v", w.BlockRatios, tt.wantBlocks)
				}
			}
		})
	}
	for i, want := range []bool{true, false, false, true, true, false, false, true} {
		if sliceWith(i) != want {
			t.Fatalf("slice %d with = %v", i, !want)
		}
	}
}

// Over 1,000 and 10,000 tenants the target is the service's share of
// ceiling (a) over as many tenants (50% and 40%), delivered exactly once,
// whether they are a sweep entry or the first count; other counts have
// none.
func TestTargetsOverManyTenants(t *testing.T) {
	t.Parallel()
	entry := func(n int, ratio float64, once bool) sweepEntry {
		return sweepEntry{Tenants: n, Ratio: ratio, Delivery: deliveryResult{ExactlyOnce: once}, MeRatio: 0.95}
	}
	routing := target{Name: "  GET /me over as many vs 1 tenant (routing alone), %", Value: 95, Goal: ">= 90", Met: true}
	tests := []struct {
		name  string
		sweep []sweepEntry
		want  []target
	}{
		{"met over 1,000, not over 10,000", []sweepEntry{entry(1, 1, true), entry(100, 0.5, true), entry(1000, 0.72, true), entry(10000, 0.3, true)},
			[]target{
				{Name: "sends/s over 1,000 tenants vs 1 tenant (median round), x", Value: 0.72, Goal: ">= 0.7", Met: true},
				routing,
				{Name: "sends/s over 10,000 tenants vs 1 tenant (median round), x", Value: 0.3, Goal: ">= 0.5"},
				routing,
			}},
		{"met over 10,000 at its goal", []sweepEntry{entry(1, 1, true), entry(10000, 0.5, true)},
			[]target{{Name: "sends/s over 10,000 tenants vs 1 tenant (median round), x", Value: 0.5, Goal: ">= 0.5", Met: true}, routing}},
		{"not met when a message was not sent exactly once", []sweepEntry{entry(1, 1, true), entry(1000, 0.9, false)},
			[]target{{Name: "sends/s over 1,000 tenants vs 1 tenant (median round), x", Value: 0.9, Goal: ">= 0.7"}, routing}},
		{"none without 1,000 or 10,000", []sweepEntry{entry(1, 1, true), entry(100, 0.5, true)}, nil},
		// -tenants 1000 alone: no 1-tenant run to compare with.
		{"1,000 tenants first", []sweepEntry{entry(1000, 1, true)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []target
			for _, tg := range targets(&sendReport{Sweep: tt.sweep}) {
				if strings.Contains(tg.Name, "tenants vs 1 tenant") || strings.Contains(tg.Name, "routing alone") {
					got = append(got, tg)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("targets\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
	for n, want := range map[int]string{1: "1", 999: "999", 1000: "1,000", 10000: "10,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Fatalf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// The median's interval takes the order statistics that bound it with at
// least 95% confidence (binomial, p = ½), and none below six rounds.
func TestMedianInterval(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n, k int
	}{{0, 0}, {5, 0}, {6, 1}, {8, 1}, {9, 2}, {15, 4}, {27, 8}, {40, 14}} {
		if got := intervalRank(tc.n); got != tc.k {
			t.Errorf("intervalRank(%d) = %d, want %d", tc.n, got, tc.k)
		}
	}
	ratios := []float64{1.04, 0.72, 0.99, 0.91, 1.13, 0.80, 0.97, 0.88, 1.01}
	low, high := medianInterval(ratios, func(r float64) float64 { return r })
	if low != 0.80 || high != 1.04 {
		t.Errorf("interval of nine rounds = %v-%v, want the 2nd smallest and the 2nd largest, 0.80-1.04", low, high)
	}
	if low, high := medianInterval(ratios[:5], func(r float64) float64 { return r }); low != 0 || high != 0 {
		t.Errorf("five rounds bound nothing at 95%%, got %v-%v", low, high)
	}
}

// TestWorkSince covers a webhook run's work per message: the kind label of
// the service's batch_size samples, and the WAL, mean batch sizes and
// outbox rows between two readings.
func TestWorkSince(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, series, want string
		ok                 bool
	}{
		{`batch_size_sum{kind="accept"}`, "batch_size_sum", "accept", true},
		{`batch_size_count{kind="deliver"}`, "batch_size_count", "deliver", true},
		{`batch_size_count{kind="deliver"}`, "batch_size_sum", "", false},
		{`batch_size_bucket{kind="accept",le="1"}`, "batch_size_sum", "", false},
	} {
		if got, ok := kindOf(tc.name, tc.series); got != tc.want || ok != tc.ok {
			t.Errorf("kindOf(%q, %q) = %q, %v, want %q, %v", tc.name, tc.series, got, ok, tc.want, tc.ok)
		}
	}
	before := workReading{wal: 1000, expanded: 3, batches: map[string][2]float64{"accept": {10, 5}, "deliver": {40, 4}}}
	after := workReading{wal: 21000, expanded: 10, batches: map[string][2]float64{"accept": {50, 15}, "deliver": {40, 4}}}
	for _, tc := range []struct {
		n    int64
		want runWork
	}{
		{10, runWork{WALBytes: 2000, AcceptBatch: 4, DeliverBatch: 0, OutboxRows: 7}},
		{0, runWork{}},
	} {
		if got := workSince(before, after, tc.n); got != tc.want {
			t.Errorf("workSince(%d messages) = %+v, want %+v", tc.n, got, tc.want)
		}
	}
}

// backendDB finds a backend's database with and without the server's
// cluster_name in its command line, and takes no server process for one.
func TestBackendDB(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cmdline, db string
		ok          bool
	}{
		{"postgres: postgres bench 127.0.0.1(55850) idle\x00\x00", "bench", true},
		{"postgres: 15/main: postgres bench 127.0.0.1(41002) SELECT\x00", "bench", true},
		{"postgres: 15/main: app bench [local] idle in transaction", "bench", true},
		{"postgres: 15/main: checkpointer ", "", false},
		{"postgres: 15/main: logical replication launcher ", "", false},
		{"postgres: background writer", "", false},
		{"/usr/lib/postgresql/15/bin/postgres\x00-D\x00/var/lib/postgresql", "", false},
		{"platform\x00worker", "", false},
	} {
		db, ok := backendDB(tc.cmdline)
		if db != tc.db || ok != tc.ok {
			t.Errorf("backendDB(%q) = %q, %v; want %q, %v", tc.cmdline, db, ok, tc.db, tc.ok)
		}
	}
}

// TestReleasedPer: the release rate of each 30 s window of the samples,
// the last one over its own length.
func TestReleasedPer(t *testing.T) {
	t.Parallel()
	var samples []memorySample
	for at := 0; at <= 75; at++ {
		released := 300 * min(at, 30)
		if at > 30 {
			released += 150 * (at - 30)
		}
		samples = append(samples, memorySample{At: float64(at), Released: released})
	}
	if got, want := releasedPer(samples, 30), "300 150 150"; got != want {
		t.Fatalf("releasedPer = %q, want %q", got, want)
	}
	if got := releasedPer(nil, 30); got != "" {
		t.Fatalf("releasedPer(nil) = %q, want empty", got)
	}
}

// GET /me is judged against 25% of bare gin: met at the goal, not just
// under it.
func TestMeTarget(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		me   float64
		want bool
	}{{24.9, false}, {25, true}, {40, true}} {
		all := targets(&sendReport{Me: loadResult{Rate: tt.me}, CeilingGin: loadResult{Rate: 100}})
		i := slices.IndexFunc(all, func(tg target) bool { return tg.Name == "GET /me vs ceiling (c) bare gin, %" })
		if i < 0 {
			t.Fatal("no GET /me target")
		}
		if got := all[i]; got.Goal != ">= 25" || got.Met != tt.want {
			t.Errorf("/me at %v%% of bare gin: %+v, want met %v against >= 25", tt.me, got, tt.want)
		}
	}
}

// A target's goal is written once: its text and its check agree, at the
// goal itself and just past it, and a failed run check fails it.
func TestGoals(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		got  target
		goal string
		met  bool
	}{
		{atLeast("a", 90, 90), ">= 90", true},
		{atLeast("a", 89.99, 90), ">= 90", false},
		{atLeast("a", 0.7, 0.7, true), ">= 0.7", true},
		{atLeast("a", 100, 90, true, false), ">= 90", false},
		{atMost("a", 32, 32), "<= 32", true},
		{atMost("a", 32.01, 32), "<= 32", false},
		{atMost("a", 1, 25, false), "<= 25", false},
		{atLeast("a", 10000, 10000), ">= 10000", true},
	} {
		if tt.got.Goal != tt.goal || tt.got.Met != tt.met {
			t.Errorf("%+v: want goal %q, met %v", tt.got, tt.goal, tt.met)
		}
	}
}
