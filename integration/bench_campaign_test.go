package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/dbtest"
)

// `platform bench campaign`, shortened: a warm-up campaign of 200, then
// 2,000 recipients added in four requests, released over two senders, every recipient one message, and
// the table and the JSON report carry the figures. The figures themselves
// are judged in docs/performance.md, never here; that the command works
// is.
func TestBenchCampaignCommand(t *testing.T) {
	t.Parallel()
	name := fmt.Sprintf("bizmsg_bench_campaign_test_%d", time.Now().UnixNano())
	out := filepath.Join(t.TempDir(), "campaign.json")
	stdout, stderr := runBench(t, "campaign",
		"-recipients", "2000", "-warmup", "200", "-chunk", "500", "-senders", "2", "-sender-rate", "200",
		"-sample", "200ms", "-timeout", "3m", "-db", name, "-out", out)
	if !strings.Contains(stderr, "warm-up: a campaign of 200 recipients, then VACUUM (ANALYZE)") {
		t.Errorf("no warm-up phase in the progress:\n%s", stderr)
	}
	// With the server's autovacuum off, the bench does its work and says so.
	var autovacuum string
	if err := dbtest.Open(t, dbtest.ServerURL(t)).Pool.QueryRow(t.Context(), "SHOW autovacuum").Scan(&autovacuum); err != nil {
		t.Fatal(err)
	}
	if stands := strings.Contains(stdout, "the bench's stand-in ran every"); stands != (autovacuum == "off") {
		t.Errorf("autovacuum %s, stand-in reported %v:\n%s", autovacuum, stands, stdout)
	}
	for _, want := range []string{"recipients added/s", "released (messages created)", "delivered (taken by the network)",
		"service RSS (VmRSS)", "backends' private memory (RssAnon)", "exactly once (messages = network = recipients)",
		"release rate vs the pool's throttle, %", "throttle 400/s"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Throttle float64 `json:"throttle"`
		Add      struct {
			Requests int     `json:"requests"`
			Added    int64   `json:"added"`
			Rate     float64 `json:"rate"`
		} `json:"add"`
		Release, Delivery struct {
			Count int64   `json:"count"`
			Rate  float64 `json:"rate"`
		}
		Once struct {
			Messages    int64 `json:"messages"`
			NetworkRows int64 `json:"network_rows"`
			Recipients  int64 `json:"recipients"`
			OK          bool  `json:"exactly_once"`
		} `json:"once"`
		Service struct {
			Start int64 `json:"start_bytes"`
			Peak  int64 `json:"peak_bytes"`
		} `json:"service_rss"`
		Backends struct {
			Peak int64 `json:"peak_bytes"`
		} `json:"backends_anon"`
		Samples []json.RawMessage `json:"samples"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Throttle != 400 || rep.Add.Requests != 4 || rep.Add.Added != 2000 || rep.Add.Rate <= 0 {
		t.Errorf("throttle %g, add %+v: want 400/s, 2,000 added in 4 requests at a positive rate", rep.Throttle, rep.Add)
	}
	if rep.Release.Count != 2000 || rep.Release.Rate <= 0 || rep.Delivery.Count != 2000 || rep.Delivery.Rate <= 0 {
		t.Errorf("release %+v, delivery %+v: want 2,000 each at a positive rate", rep.Release, rep.Delivery)
	}
	if !rep.Once.OK || rep.Once.Messages != 2000 || rep.Once.NetworkRows != 2000 || rep.Once.Recipients != 2000 {
		t.Errorf("exactly once %+v, want 2,000 messages, network rows and recipients", rep.Once)
	}
	if rep.Service.Start <= 0 || rep.Service.Peak < rep.Service.Start || rep.Backends.Peak <= 0 || len(rep.Samples) < 2 {
		t.Errorf("memory: service %+v, backends peak %d, %d samples: want positive figures over at least two samples",
			rep.Service, rep.Backends.Peak, len(rep.Samples))
	}
}
