package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bizmsg/platform/platform/db"
)

const benchCampaignUsage = `Usage: platform bench campaign [flags]

Measures one campaign end to end on platform serve (a child process), in a
scratch database on DATABASE_URL's server: one organization with -senders
active sender numbers, each at -sender-rate messages/s (the organization's
sender throttle), and -recipients reachable recipients on the built-in
network.

  warm-up   unmeasured: a campaign to the first -warmup recipients, run to
            the end, then VACUUM (ANALYZE): the measured campaign starts on
            tables that hold rows and statistics that say so
  add       the recipients added to a draft campaign through POST
            /api/v1/campaigns/{id}/recipients in requests of -chunk (JSON),
            one after the other: recipients added per second
  release   the campaign started: recipients released (their messages
            created) and delivered per second, against the pool's
            aggregate throttle (senders x rate)
  memory    the service's resident set (VmRSS) and the private memory
            (RssAnon) of the Postgres backends serving it, sampled every
            -sample from the start to the end: start, peak and end
  autovac   with the server's autovacuum off, the bench does its work in
            the scratch database meanwhile (same thresholds and naptime)
  exactly   every recipient one message on the network, none twice
  once

Prints a table on stdout (and JSON with -out), a progress line on stderr.
Exits non-zero when a recipient did not get exactly one message.

Flags:
`

// campaignConfig is the campaign benchmark's configuration (its flags).
type campaignConfig struct {
	Recipients  int           `json:"recipients"`
	Chunk       int           `json:"chunk"`
	WarmUp      int           `json:"warm_up"`
	Senders     int           `json:"senders"`
	SenderRate  float64       `json:"sender_rate"`
	SenderBurst int           `json:"sender_burst"`
	DBMaxConns  int           `json:"db_max_conns"`
	LogLevel    string        `json:"service_log_level"`
	Sample      time.Duration `json:"sample_ns"`
	Timeout     time.Duration `json:"timeout_ns"`
	Database    string        `json:"database"`
}

// campaignAdd is the add phase: the recipients added in requests of -chunk.
type campaignAdd struct {
	Requests int   `json:"requests"`
	Added    int64 `json:"added"`
	// Elapsed is from the first request sent to the last answered.
	Elapsed time.Duration `json:"elapsed_ns"`
	// Rate is recipients added per second; P50 and Max are one request's
	// time in milliseconds.
	Rate float64 `json:"rate"`
	P50  float64 `json:"request_p50_ms"`
	Max  float64 `json:"request_max_ms"`
}

// campaignRate is how fast the campaign's messages were released or
// delivered: Count of them from the start to the last (Elapsed), and
// Rate beside the pool's aggregate throttle (Ratio).
type campaignRate struct {
	Count   int64         `json:"count"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Rate    float64       `json:"rate"`
	Ratio   float64       `json:"ratio_to_throttle"`
}

// memorySample is one reading of the memory sampler, At seconds after the
// start.
type memorySample struct {
	At           float64 `json:"at_s"`
	ServiceRSS   int64   `json:"service_rss_bytes"`
	Backends     int     `json:"backends"`
	BackendsAnon int64   `json:"backends_anon_bytes"`
	// Released and Delivered are the campaign's counts then.
	Released  int `json:"released"`
	Delivered int `json:"delivered"`
}

// memoryRange is a figure's start, peak and end over the samples, and
// its warm reading: the first once a quarter of the recipients were
// released. The first quarter warms the figure up without saying anything
// of the campaign's size: the service's pool opens connections as the
// load asks, and each new backend fills its catalog, relation and plan
// caches (together 80-90 MB over 11 backends in the runs of
// docs/performance.md). Memory that grew with the recipients would grow
// on through the other three quarters: WarmPeak is the peak from the warm
// reading on, and flat is judged by WarmPeak - Warm.
type memoryRange struct {
	Start    int64 `json:"start_bytes"`
	Warm     int64 `json:"warm_bytes"`
	WarmPeak int64 `json:"warm_peak_bytes"`
	Peak     int64 `json:"peak_bytes"`
	End      int64 `json:"end_bytes"`
}

// growth is how far the figure rose over its warm reading, in MB.
func (r memoryRange) growth() float64 { return float64(r.WarmPeak-r.Warm) / (1 << 20) }

// String prints the range in MB.
func (r memoryRange) String() string {
	mb := func(b int64) float64 { return float64(b) / (1 << 20) }
	return fmt.Sprintf("start %.1f  warm %.1f  peak %.1f  end %.1f MB  (peak since warm - warm %+.1f MB)",
		mb(r.Start), mb(r.Warm), mb(r.Peak), mb(r.End), r.growth())
}

// campaignOnce is the exactly-once check.
type campaignOnce struct {
	// Messages is the campaign's messages, NetworkRows the network's
	// messages carrying their references, Recipients the distinct
	// recipients of those, Delivered the campaign's delivered count.
	Messages    int64 `json:"messages"`
	NetworkRows int64 `json:"network_rows"`
	Recipients  int64 `json:"recipients"`
	Delivered   int   `json:"delivered"`
	OK          bool  `json:"exactly_once"`
}

// campaignReport is the whole result, as -out writes it.
type campaignReport struct {
	Command   string         `json:"command"`
	StartedAt time.Time      `json:"started_at"`
	Config    campaignConfig `json:"config"`
	CPUs      int            `json:"cpus"`
	GoVersion string         `json:"go_version"`
	// Throttle is the pool's aggregate throttle, messages/s.
	Throttle float64 `json:"throttle"`
	// CPUBusy is the machine's CPU use from the start to the end, in
	// percent of all CPUs; CPUPerMessage the CPU time of the service and
	// the backends of its database per recipient, in milliseconds. A
	// release below the throttle on a machine near 100% was bound by the
	// machine, not by its pacing.
	CPUBusy       float64        `json:"machine_cpu_busy_pct"`
	CPUPerMessage float64        `json:"service_db_cpu_ms_per_message"`
	Add           campaignAdd    `json:"add"`
	Release       campaignRate   `json:"release"`
	Delivery      campaignRate   `json:"delivery"`
	Once          campaignOnce   `json:"once"`
	Service       memoryRange    `json:"service_rss"`
	Backends      memoryRange    `json:"backends_anon"`
	Samples       []memorySample `json:"samples"`
	Targets       []target       `json:"targets"`
	Elapsed       float64        `json:"elapsed_s"`
	// Autovacuum says what the bench's stand-in for autovacuum did, when
	// the server's is off ("" when it is on).
	Autovacuum string `json:"autovacuum,omitempty"`
}

// benchCampaign is platform bench campaign.
func benchCampaign(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := benchFlags("bench campaign", benchCampaignUsage, stderr)
	var cfg campaignConfig
	fs.IntVar(&cfg.Recipients, "recipients", 100000, "recipients of the campaign (at most 100,000)")
	fs.IntVar(&cfg.Chunk, "chunk", 10000, "recipients per request of the add phase (at most 10,000)")
	fs.IntVar(&cfg.WarmUp, "warmup", 2000, "recipients of an unmeasured warm-up campaign run first, then VACUUM (ANALYZE) (0: none)")
	fs.IntVar(&cfg.Senders, "senders", 4, "sender numbers of the campaign's pool (1 to 50)")
	fs.Float64Var(&cfg.SenderRate, "sender-rate", 100, "each sender's throttle, messages/s (the organization's sender_rate, and SENDER_RATE)")
	fs.IntVar(&cfg.SenderBurst, "sender-burst", 0, "each sender's burst (sender_burst, SENDER_BURST); 0: the rate's whole number, at least 1")
	fs.IntVar(&cfg.DBMaxConns, "db-max-conns", 10, "DB_MAX_CONNS of the service")
	fs.StringVar(&cfg.LogLevel, "log-level", "warn", "LOG_LEVEL of the service")
	fs.DurationVar(&cfg.Sample, "sample", time.Second, "how often the memory and the campaign's counts are sampled")
	fs.DurationVar(&cfg.Timeout, "timeout", 20*time.Minute, "how long to wait for the campaign to complete")
	keep := scratchFlags(fs, &cfg.Database, "campaign")
	out := fs.String("out", "", "also write the results as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.SenderBurst == 0 {
		cfg.SenderBurst = max(int(cfg.SenderRate), 1)
	}
	switch {
	case cfg.Recipients < 1 || cfg.Recipients > 100000:
		return errors.New("-recipients must be from 1 to 100,000")
	case cfg.Chunk < 1 || cfg.Chunk > 10000:
		return errors.New("-chunk must be from 1 to 10,000")
	case cfg.WarmUp < 0:
		return errors.New("-warmup must not be negative")
	case cfg.Senders < 1 || cfg.Senders > 50:
		return errors.New("-senders must be from 1 to 50")
	case cfg.SenderRate <= 0 || cfg.SenderBurst < 1:
		return errors.New("-sender-rate must be positive and -sender-burst at least 1")
	case cfg.DBMaxConns < 2:
		return errors.New("-db-max-conns must be at least 2")
	case cfg.Sample < 10*time.Millisecond || cfg.Timeout <= 0:
		return errors.New("-sample must be at least 10ms and -timeout positive")
	}
	b := &campaignBench{cfg: cfg, stderr: stderr}
	rep, err := b.run(ctx, "platform bench campaign "+strings.Join(args, " "), *keep)
	return finish(stdout, *out, rep, err, printCampaignReport)
}

// campaignBench runs one campaign benchmark.
type campaignBench struct {
	cfg    campaignConfig
	stderr io.Writer
	scratch
	tenant benchTenant
	prog   *progress
	client *http.Client
	// base is the service's base URL.
	base string
}

// serviceEnv is the service's environment: the scratch database, the
// fixtures' pepper, the pool's throttle, limits that never bind.
func (b *campaignBench) serviceEnv() []string {
	return b.env(b.cfg.DBMaxConns, b.cfg.LogLevel,
		"SENDER_RATE="+strconv.FormatFloat(b.cfg.SenderRate, 'f', -1, 64), "SENDER_BURST="+strconv.Itoa(b.cfg.SenderBurst))
}

func (b *campaignBench) run(ctx context.Context, command string, keep bool) (*campaignReport, error) {
	started := time.Now()
	rep := &campaignReport{Command: command, StartedAt: started.UTC(), Config: b.cfg, CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
		Throttle: float64(b.cfg.Senders) * b.cfg.SenderRate}
	closeScratch, err := b.open(ctx, b.cfg.Database, 4, keep)
	if err != nil {
		return nil, err
	}
	defer closeScratch()
	b.prog = newProgress(b.stderr)
	defer b.prog.close()
	b.client = &http.Client{Timeout: 2 * time.Minute}
	if err := b.setup(ctx); err != nil {
		return nil, err
	}
	svc, err := startChild(ctx, []string{"serve"}, b.serviceEnv(), true)
	if err != nil {
		return nil, err
	}
	b.base = "http://" + svc.addr
	err = b.measure(ctx, rep, svc)
	svc.keep = err != nil // the service's log may say why
	err = errors.Join(err, svc.stop())
	rep.Targets = campaignTargets(rep)
	rep.Elapsed = time.Since(started).Seconds()
	if err == nil && !rep.Once.OK {
		err = fmt.Errorf("exactly-once check failed: %d recipients, %d messages, %d network rows to %d recipients, %d delivered",
			b.cfg.Recipients, rep.Once.Messages, rep.Once.NetworkRows, rep.Once.Recipients, rep.Once.Delivered)
	}
	return rep, err
}

// setup migrates the scratch database and builds the organization, its
// senders with their throttle, and the recipients.
func (b *campaignBench) setup(ctx context.Context) error {
	b.prog.phase(fmt.Sprintf("fixtures: 1 organization, %d senders, %d recipients", b.cfg.Senders, b.cfg.Recipients))(0)
	f, err := newFixtures(ctx, b.d, b.pepper, fixtureConfig{
		Tenants: 1, Senders: b.cfg.Senders, Recipients: b.cfg.Recipients, Concurrency: 1, DailyLimit: 100000000,
	}, true)
	if err != nil {
		return err
	}
	ts, err := f.build(ctx, nil)
	if err != nil {
		return err
	}
	b.tenant = ts[0]
	if _, err := b.d.Pool.Exec(ctx, `UPDATE central.organizations SET sender_rate = $2, sender_burst = $3 WHERE id = $1`,
		b.tenant.Tenant.OrgID, b.cfg.SenderRate, b.cfg.SenderBurst); err != nil {
		return fmt.Errorf("sender throttle: %w", err)
	}
	if _, err := b.d.Pool.Exec(ctx, "ANALYZE"); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	return nil
}

// call sends a request to the service with the organization's key and
// decodes the "data" of a want answer into v.
func (b *campaignBench) call(ctx context.Context, method, path, contentType string, body []byte, want int, v any) error {
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("X-Api-Key", b.tenant.APIKey)
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	raw, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return fmt.Errorf("%s %s: read: %w", method, path, err)
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s = %d %s, want %d", method, path, resp.StatusCode, bytes.TrimSpace(raw[:min(len(raw), 500)]), want)
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("%s %s: decode: %w", method, path, err)
	}
	if err := json.Unmarshal(env.Data, v); err != nil {
		return fmt.Errorf("%s %s: decode data: %w", method, path, err)
	}
	return nil
}

// benchCampaignView is what the benchmark reads of the campaign.
type benchCampaignView struct {
	ID     int64          `json:"id"`
	Status string         `json:"status"`
	Counts map[string]int `json:"counts"`
}

// done reports whether every recipient's message reached its end on the
// built-in network (delivered, or failed or skipped) and the campaign
// completed.
func (v benchCampaignView) done() bool {
	c := v.Counts
	return v.Status == "completed" && c["pending"] == 0 && c["queued"] == 0 && c["sent"] == 0
}

// measure runs the phases on the running service.
func (b *campaignBench) measure(ctx context.Context, rep *campaignReport, svc *child) (err error) {
	// The memory figures of whatever was sampled, also when the campaign
	// did not complete.
	defer func() { rep.Service, rep.Backends = memoryRanges(rep.Samples, b.cfg.Recipients) }()
	if b.cfg.WarmUp > 0 {
		if err := b.warmUp(ctx); err != nil {
			return err
		}
	}
	camp, err := b.create(ctx, "bench campaign")
	if err != nil {
		return err
	}
	if rep.Add, err = b.add(ctx, camp.ID, b.cfg.Recipients); err != nil {
		return err
	}

	// The release, with the sampler.
	p := b.prog.phase(fmt.Sprintf("campaign of %d recipients at %g/s over %d senders", b.cfg.Recipients, rep.Throttle, b.cfg.Senders))
	start := time.Now()
	cpu, scope := readCPU(), scopeCPU(b.cfg.Database, svc.cmd.Process.Pid)
	defer func() {
		rep.CPUBusy = busySince(cpu)
		rep.CPUPerMessage = cpuPerMessage(scopeCPU(b.cfg.Database, svc.cmd.Process.Pid).since(scope), int64(b.cfg.Recipients))
	}()
	sample := func(v benchCampaignView) {
		m := sampleMemory(ctx, b.d, svc.cmd.Process.Pid)
		m.At = time.Since(start).Seconds()
		m.Released = v.Counts["total"] - v.Counts["pending"]
		m.Delivered = v.Counts["delivered"] + v.Counts["read"]
		rep.Samples = append(rep.Samples, m)
		p(int64(m.Delivered))
	}
	sample(camp)
	av, err := startStandIn(ctx, b.d)
	if err != nil {
		return err
	}
	defer func() {
		var avErr error
		rep.Autovacuum, avErr = av.stop()
		err = errors.Join(err, avErr)
	}()
	start = time.Now()
	if camp, err = b.complete(ctx, camp, sample); err != nil {
		return err
	}
	return b.outcome(ctx, rep, camp, start)
}

// warmUp runs, unmeasured, a campaign to the first -warmup recipients and
// then VACUUM (ANALYZE), so that the measured campaign starts on tables
// that hold rows and planner statistics that say so, as an organization's
// tables do once it has sent anything. Analyzed while empty (the
// fixtures), the service's prepared statements, River's and the foreign
// keys' checks keep generic plans made for empty tables until autovacuum
// (or its stand-in) analyzes them, up to a naptime into the campaign.
func (b *campaignBench) warmUp(ctx context.Context) error {
	n := min(b.cfg.WarmUp, b.cfg.Recipients)
	p := b.prog.phase(fmt.Sprintf("warm-up: a campaign of %d recipients, then VACUUM (ANALYZE)", n))
	camp, err := b.create(ctx, "bench warm-up")
	if err != nil {
		return err
	}
	if _, err := b.add(ctx, camp.ID, n); err != nil {
		return err
	}
	if _, err := b.complete(ctx, camp, func(v benchCampaignView) { p(int64(v.Counts["delivered"] + v.Counts["read"])) }); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if _, err := b.d.Pool.Exec(ctx, "VACUUM (ANALYZE)"); err != nil {
		return fmt.Errorf("warm-up: vacuum: %w", err)
	}
	return nil
}

// create creates a draft text campaign named name over the senders.
func (b *campaignBench) create(ctx context.Context, name string) (benchCampaignView, error) {
	var camp benchCampaignView
	body, err := json.Marshal(map[string]any{"name": name, "sender_number_ids": b.tenant.Senders,
		"type": "text", "content": "Hello from the campaign benchmark."})
	if err != nil {
		return camp, err
	}
	err = b.call(ctx, http.MethodPost, "/api/v1/campaigns", "application/json", body, http.StatusCreated, &camp)
	return camp, err
}

// complete starts draft camp and reads it every -sample, handing each
// reading to sample, until every recipient's message reached its end
// (done) or -timeout.
func (b *campaignBench) complete(ctx context.Context, camp benchCampaignView, sample func(benchCampaignView)) (benchCampaignView, error) {
	if err := b.call(ctx, http.MethodPost, fmt.Sprintf("/api/v1/campaigns/%d/start", camp.ID), "", nil, http.StatusOK, &camp); err != nil {
		return camp, err
	}
	tick := time.NewTicker(b.cfg.Sample)
	defer tick.Stop()
	deadline := time.After(b.cfg.Timeout)
	for !camp.done() {
		select {
		case <-ctx.Done():
			return camp, ctx.Err()
		case <-deadline:
			return camp, fmt.Errorf("the campaign did not complete within -timeout %s: %s, counts %v", b.cfg.Timeout, camp.Status, camp.Counts)
		case <-tick.C:
		}
		if err := b.call(ctx, http.MethodGet, fmt.Sprintf("/api/v1/campaigns/%d", camp.ID), "", nil, http.StatusOK, &camp); err != nil {
			return camp, err
		}
		sample(camp)
	}
	return camp, nil
}

// add adds the recipients to the draft in requests of -chunk, one after
// the other.
func (b *campaignBench) add(ctx context.Context, id int64, n int) (campaignAdd, error) {
	var res campaignAdd
	p := b.prog.phase(fmt.Sprintf("adding %d recipients in requests of %d", n, b.cfg.Chunk))
	var took []time.Duration
	start := time.Now()
	for from := 0; from < n; from += b.cfg.Chunk {
		rows := make([]map[string]string, 0, b.cfg.Chunk)
		for i := from; i < min(from+b.cfg.Chunk, n); i++ {
			rows = append(rows, map[string]string{"phone": recipientPhone(i)})
		}
		body, err := json.Marshal(rows)
		if err != nil {
			return res, err
		}
		var added struct {
			Added   int64             `json:"added"`
			Invalid []json.RawMessage `json:"invalid"`
		}
		t0 := time.Now()
		if err := b.call(ctx, http.MethodPost, fmt.Sprintf("/api/v1/campaigns/%d/recipients", id), "application/json", body, http.StatusOK, &added); err != nil {
			return res, err
		}
		took = append(took, time.Since(t0))
		if len(added.Invalid) > 0 {
			return res, fmt.Errorf("add: %d rows refused, first %s", len(added.Invalid), added.Invalid[0])
		}
		res.Requests++
		res.Added += added.Added
		p(res.Added)
	}
	if res.Added != int64(n) {
		return res, fmt.Errorf("add: %d recipients added of %d", res.Added, n)
	}
	res.Elapsed = time.Since(start)
	res.Rate = float64(res.Added) / res.Elapsed.Seconds()
	slices.Sort(took)
	res.P50, res.Max = pctMS(took, 0.5), ms(took[len(took)-1])
	return res, nil
}

// outcome reads the release and delivery rates and the exactly-once check
// from the campaign's messages (created at release; sent_at when the
// network took them) and the network's.
func (b *campaignBench) outcome(ctx context.Context, rep *campaignReport, camp benchCampaignView, start time.Time) error {
	b.prog.phase("exactly once")(0)
	var released, sent *time.Time
	err := b.d.Pool.QueryRow(ctx, `SELECT count(*), max(m.created_at), max(m.sent_at),
		       (SELECT count(*) FROM network.messages n JOIN `+b.tenant.Tenant.Table("messages")+` c
		          ON n.reference = $2 || ':' || c.id WHERE c.campaign_id = $1),
		       (SELECT count(DISTINCT n.to_account_id) FROM network.messages n JOIN `+b.tenant.Tenant.Table("messages")+` c
		          ON n.reference = $2 || ':' || c.id WHERE c.campaign_id = $1)
		FROM `+b.tenant.Tenant.Table("messages")+` m WHERE m.campaign_id = $1`,
		camp.ID, b.tenant.Tenant.Schema).Scan(&rep.Once.Messages, &released, &sent, &rep.Once.NetworkRows, &rep.Once.Recipients)
	if err != nil {
		return fmt.Errorf("the campaign's messages: %w", err)
	}
	rep.Once.Delivered = camp.Counts["delivered"] + camp.Counts["read"]
	n := int64(b.cfg.Recipients)
	rep.Once.OK = rep.Once.Messages == n && rep.Once.NetworkRows == n && rep.Once.Recipients == n && int64(rep.Once.Delivered) == n
	rate := func(count int64, last *time.Time) campaignRate {
		r := campaignRate{Count: count}
		if last != nil && last.After(start) {
			r.Elapsed = last.Sub(start)
			r.Rate = float64(count) / r.Elapsed.Seconds()
			r.Ratio = r.Rate / rep.Throttle
		}
		return r
	}
	rep.Release = rate(rep.Once.Messages, released)
	rep.Delivery = rate(rep.Once.NetworkRows, sent)
	return nil
}

// sampleMemory reads the service's current resident set (VmRSS; pid) and
// the private memory of the backends serving it (serviceApp).
func sampleMemory(ctx context.Context, d *db.DB, pid int) memorySample {
	var s memorySample
	if st, err := procStatus(pid, "VmRSS"); err == nil {
		s.ServiceRSS = st["VmRSS"]
	}
	m := measureMemory(ctx, d, pid)
	s.Backends, s.BackendsAnon = m.Backends, m.BackendsAnon
	return s
}

// memoryRanges is the service's and the backends' memoryRange over the
// samples of a campaign of n recipients. Without a sample past a quarter
// released (a campaign that stalled), the warm reading is the last.
func memoryRanges(samples []memorySample, n int) (service, backends memoryRange) {
	if len(samples) == 0 {
		return
	}
	first, last := samples[0], samples[len(samples)-1]
	service = memoryRange{Start: first.ServiceRSS, End: last.ServiceRSS}
	backends = memoryRange{Start: first.BackendsAnon, End: last.BackendsAnon}
	warm := slices.IndexFunc(samples, func(s memorySample) bool { return 4*s.Released >= n })
	if warm < 0 {
		warm = len(samples) - 1
	}
	service.Warm, backends.Warm = samples[warm].ServiceRSS, samples[warm].BackendsAnon
	for i, s := range samples {
		service.Peak = max(service.Peak, s.ServiceRSS)
		backends.Peak = max(backends.Peak, s.BackendsAnon)
		if i >= warm {
			service.WarmPeak = max(service.WarmPeak, s.ServiceRSS)
			backends.WarmPeak = max(backends.WarmPeak, s.BackendsAnon)
		}
	}
	return service, backends
}
