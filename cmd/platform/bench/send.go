package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bizmsg/platform/platform/defaults"
)

const benchSendUsage = `Usage: platform bench send [flags]

Measures the send path of the platform against the ceilings of this machine,
in one run, in a scratch database on DATABASE_URL's server. After building
the fixtures it runs ANALYZE and CHECKPOINT, and after the ceilings VACUUM
(ANALYZE) and CHECKPOINT (what they wrote and deleted would otherwise be
autovacuum's work, and their WAL would start a checkpoint, under the
service's measured phases):

  ceiling (a)  raw Postgres: C workers commit a message row and its River job
               (River's InsertTx on a pgx transaction), no HTTP, no checks;
               then over each -tenants count after the first, in rounds
               like the service's sweep, with every tenant's insert prepared
  ceiling (b)  River alone: -backlog no-op jobs on the delivery queue, worked
               with the service's River settings
  ceiling (c)  a bare gin handler returning a small JSON object (a child
               process), driven by the same load generator as GET /api/v1/me
  service      platform serve as a child process on a loopback port:
               POST /api/v1/messages closed loop (C clients for -duration),
               delivery of everything accepted (throughput, lag, exactly
               once), open loop at a fixed rate (latency), GET /api/v1/me,
               the closed loop against ceiling (a) in -pair-rounds rounds
               back to back, and the -tenants sweep (sends, then GET
               /api/v1/me, in each round); peak RSS is the child's VmHWM
  drain        platform api accepts -backlog messages over -recipients,
               then platform worker delivers them: delivery capacity,
               compared with ceiling (b); then -backlog messages to as many
               recipients (one each), delivered by one worker and then by
               -drain-workers worker processes (their rate beside the one
               worker's), the first backlog's shape over those processes,
               and a deep conversation (-conversation messages, one sender
               to one recipient) that they deliver at the sender's
               throttle, in acceptance order

Prints a table on stdout (and JSON with -out), a progress line on stderr.
Exits non-zero when an accepted message was not sent exactly once.
With -citus, the same phases run again on a local 3-node Citus cluster that
the bench starts (scripts/citus-cluster) and stops, the scratch database on
its coordinator, every tenant schema distributed to a worker; both runs are
printed, then their tenant sweeps side by side.

Flags:
`

// sendConfig is the benchmark's configuration (its flags).
type sendConfig struct {
	Tenants            []int         `json:"tenants"`
	Senders            int           `json:"senders_per_tenant"`
	Recipients         int           `json:"recipients"`
	Concurrency        int           `json:"concurrency"`
	Duration           time.Duration `json:"duration_ns"`
	SweepDuration      time.Duration `json:"sweep_duration_ns"`
	SweepWarmup        time.Duration `json:"sweep_warmup_ns"`
	SweepWarmupSends   float64       `json:"sweep_warmup_sends_per_pair"`
	SweepRounds        int           `json:"sweep_rounds"`
	PairRounds         int           `json:"pair_rounds"`
	WebhookRounds      int           `json:"webhook_rounds"`
	WebhookSlices      int           `json:"webhook_slices"`
	WebhookSlice       time.Duration `json:"webhook_slice_ns"`
	OpenRate           float64       `json:"open_rate"`
	Backlog            int           `json:"backlog"`
	DBMaxConns         int           `json:"db_max_conns"`
	LogLevel           string        `json:"service_log_level"`
	FixtureConcurrency int           `json:"fixture_concurrency"`
	DeliveryTimeout    time.Duration `json:"delivery_timeout_ns"`
	Database           string        `json:"database"`
	// DrainWorkers is the worker processes of the second drain (0 skips
	// it), DrainWorkerConns each one's DB_MAX_CONNS; Conversation the
	// messages of the deep conversation (0 skips it), delivered at
	// ConversationRate and ConversationBurst.
	DrainWorkers      int     `json:"drain_workers"`
	DrainWorkerConns  int     `json:"drain_worker_db_max_conns"`
	Conversation      int     `json:"conversation"`
	ConversationRate  float64 `json:"conversation_rate"`
	ConversationBurst int     `json:"conversation_burst"`
}

// deliveryResult is what happened to the messages a phase accepted.
type deliveryResult struct {
	// Accepted counts 202 answers; Rows the phase's message rows; Sent those
	// the network took (status sent, or delivered: the built-in network
	// delivers as it takes them); NetworkRows the network messages carrying the rows'
	// references (the reference is unique in the network).
	Accepted    int64 `json:"accepted"`
	Rows        int64 `json:"rows"`
	Sent        int64 `json:"sent"`
	NetworkRows int64 `json:"network_rows"`
	ExactlyOnce bool  `json:"exactly_once"`
	// Rate is sent messages per second from the first acceptance to the
	// last sent_at; LagP50/P99 the acceptance-to-sent lag in milliseconds.
	Rate   float64 `json:"rate"`
	LagP50 float64 `json:"lag_p50_ms"`
	LagP99 float64 `json:"lag_p99_ms"`
}

// sweepEntry is one tenant count of the sweep.
type sweepEntry struct {
	Tenants  int            `json:"tenants"`
	Send     loadResult     `json:"send"`
	Delivery deliveryResult `json:"delivery"`
	// Ratio is the sends/s over the first entry's tenant count's: the median
	// of the rounds' ratios (Send and Delivery are that round's), or for the
	// first entry 1.
	Ratio float64 `json:"ratio_to_first"`
	// Me and MeRatio are GET /api/v1/me over this many tenants (key
	// authentication, the organization, one read: the cost of routing a
	// request to its tenant, without the tenant's writes): the round with
	// the median /me ratio, or for the first entry the /me phase.
	Me      loadResult   `json:"me"`
	MeRatio float64      `json:"me_ratio_to_first"`
	Rounds  []sweepRound `json:"rounds,omitempty"`
	// Memory is read after the entry's runs (for the first entry, after
	// the closed loop): the service's peak so far and what the backends
	// serving it hold, which grows with the tenants they have seen.
	Memory memory `json:"memory"`
}

// sweepRound is one round of a sweep entry: the first entry's tenant count
// (the base) and then this entry's, measured back to back, so that the
// machine's drift between the two is small.
type sweepRound struct {
	Base         loadResult     `json:"base"`
	BaseDelivery deliveryResult `json:"base_delivery"`
	Send         loadResult     `json:"send"`
	Delivery     deliveryResult `json:"delivery"`
	Ratio        float64        `json:"ratio"`
	// MeBase and Me are GET /api/v1/me over the first count and this one,
	// back to back after the sends; MeRatio is Me's rate over MeBase's.
	MeBase  loadResult `json:"me_base"`
	Me      loadResult `json:"me"`
	MeRatio float64    `json:"me_ratio"`
}

// ceilingSweepEntry is ceiling (a) over one -tenants count after the first,
// measured like the service's sweep entry: an unmeasured warm-up, then
// rounds of the first count and this count back to back. Spread and Ratio
// are the median round's.
type ceilingSweepEntry struct {
	Tenants int            `json:"tenants"`
	Spread  loadResult     `json:"spread"`
	Ratio   float64        `json:"ratio_to_first"`
	Rounds  []ceilingRound `json:"rounds"`
}

// ceilingRound is one round of a ceiling sweep entry.
type ceilingRound struct {
	Base   loadResult `json:"base"`
	Spread loadResult `json:"spread"`
	Ratio  float64    `json:"ratio"`
	// BaseWAL and SpreadWAL are the WAL each run wrote per transaction.
	BaseWAL   walPerTx `json:"base_wal"`
	SpreadWAL walPerTx `json:"spread_wal"`
}

// pairedRound is one round of the paired measurement of the service
// against ceiling (a): both over the first -tenants count, each for
// -sweep-duration, back to back (in alternating order), so that the
// machine's drift and the tables' state between the two are small.
type pairedRound struct {
	Ceiling  loadResult     `json:"ceiling"`
	Send     loadResult     `json:"send"`
	Delivery deliveryResult `json:"delivery"`
	// CeilingFirst tells the round's order.
	CeilingFirst bool `json:"ceiling_first"`
	// Ratio is Send's rate over Ceiling's.
	Ratio float64 `json:"ratio"`
}

// target is one of the targets with its measured value.
type target struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Goal  string  `json:"goal"`
	Met   bool    `json:"met"`
}

// atLeast is target name, met when value reaches goal and every one of
// also holds (the run's checks the figure depends on).
func atLeast(name string, value, goal float64, also ...bool) target {
	return target{Name: name, Value: value, Goal: ">= " + strconv.FormatFloat(goal, 'f', -1, 64),
		Met: value >= goal && !slices.Contains(also, false)}
}

// atMost is target name, met when value stays within goal and every one
// of also holds.
func atMost(name string, value, goal float64, also ...bool) target {
	return target{Name: name, Value: value, Goal: "<= " + strconv.FormatFloat(goal, 'f', -1, 64),
		Met: value <= goal && !slices.Contains(also, false)}
}

// sendReport is the whole result, as -out writes it.
type sendReport struct {
	Command   string     `json:"command"`
	StartedAt time.Time  `json:"started_at"`
	Config    sendConfig `json:"config"`
	CPUs      int        `json:"cpus"`
	GoVersion string     `json:"go_version"`
	// Server is what the database server was set to.
	Server serverSettings `json:"server"`
	// Citus is where the tenant schemas are, on a Citus cluster (-citus).
	Citus *citusPlacement `json:"citus,omitempty"`

	CeilingPostgres loadResult `json:"ceiling_postgres"`
	// CeilingWAL is the WAL ceiling (a) wrote per transaction.
	CeilingWAL walPerTx `json:"ceiling_postgres_wal"`
	// CeilingSweep is ceiling (a) over each -tenants count after the first:
	// what spreading the same transactions over more tenant schemas costs
	// Postgres itself.
	CeilingSweep []ceilingSweepEntry `json:"ceiling_postgres_sweep"`
	CeilingRiver drainResult         `json:"ceiling_river"`
	CeilingGin   loadResult          `json:"ceiling_bare_gin"`

	Send         loadResult     `json:"send_closed"`
	Delivery     deliveryResult `json:"delivery"`
	Open         loadResult     `json:"send_open"`
	OpenDelivery deliveryResult `json:"send_open_delivery"`
	// OpenCheckpoints counts the checkpoints the server started during the
	// open loop: the first change of each page after one is logged whole,
	// which shows in the latency tail.
	OpenCheckpoints int64 `json:"send_open_checkpoints"`
	// FixtureCheckpoint is the error of the first CHECKPOINT that failed
	// (after the fixtures or the ceilings), empty when both ran (they need
	// superuser or pg_checkpoint).
	FixtureCheckpoint string     `json:"fixture_checkpoint_error,omitempty"`
	Me                loadResult `json:"me"`
	// Paired is the service's closed loop against ceiling (a) in
	// -pair-rounds rounds, measured back to back while the service runs;
	// PairedRatio is the median of their ratios. The single runs (Send,
	// CeilingPostgres) are minutes apart, and ceiling (a)'s comes first,
	// on tables that only the fixtures have written.
	Paired      []pairedRound `json:"paired"`
	PairedRatio float64       `json:"paired_ratio"`
	// Webhooks is the closed loop without and with a webhook endpoint per
	// tenant in -webhook-rounds rounds, with the webhooks' delivery;
	// WebhookRatio is the median of the rounds' with/without ratios, and
	// WebhookCPURatio of their CPU ratios (webhookRound.CPURatio).
	Webhooks        []webhookRound `json:"webhooks"`
	WebhookRatio    float64        `json:"webhook_ratio"`
	WebhookCPURatio float64        `json:"webhook_cpu_ratio"`
	// WebhookRatioLow and WebhookRatioHigh bound the median ratio the
	// rounds estimate, at 95% confidence (medianInterval); both 0 with
	// fewer than six rounds, which cannot bound it at that level.
	WebhookRatioLow  float64 `json:"webhook_ratio_low"`
	WebhookRatioHigh float64 `json:"webhook_ratio_high"`
	// WebhookSlices is the interleaved measurement (-webhook-slices).
	WebhookSlices *webhookSlices `json:"webhook_slices,omitempty"`
	Sweep         []sweepEntry   `json:"sweep"`
	PeakRSSBytes  int64          `json:"service_peak_rss_bytes"`
	// DrainAccept is the acceptance of the drain's backlog by platform api
	// alone (no delivery running in the process or the database), the same
	// work as ceiling (a) does.
	DrainAccept loadResult     `json:"send_api_only"`
	Drain       drainResult    `json:"delivery_drain"`
	DrainCheck  deliveryResult `json:"delivery_drain_check"`
	// DrainCPU is the CPU time of the worker and its database's backends
	// per message of the drain, in milliseconds; DrainCPUWorker the
	// worker's part.
	DrainCPU       float64 `json:"delivery_drain_cpu_ms_per_message"`
	DrainCPUWorker float64 `json:"delivery_drain_worker_cpu_ms_per_message"`
	// DrainWorkers is the drain over -drain-workers worker processes and
	// the deep conversation; nil when skipped.
	DrainWorkers *workersDrain `json:"delivery_drain_workers,omitempty"`

	Targets []target `json:"targets"`
	Elapsed float64  `json:"elapsed_s"`
}

func parseTenantList(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-tenants: %q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// benchSend is platform bench send.
func benchSend(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := benchFlags("bench send", benchSendUsage, stderr)
	tenantList := fs.String("tenants", "1,100,1000", "tenant counts of the sweep, comma-separated; the first is also the tenant count of every other service phase and of ceiling (a), which is also measured over each count; the largest is provisioned")
	var cfg sendConfig
	fs.IntVar(&cfg.Senders, "senders", 4, "active sender numbers per tenant (at most 100); sends go round-robin over tenants, then senders")
	fs.IntVar(&cfg.Recipients, "recipients", 200, "recipients on the built-in network, shared by all tenants")
	fs.IntVar(&cfg.Concurrency, "concurrency", 16, "concurrent clients (closed loop) and ceiling (a) workers")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "length of the closed-loop send, open-loop send, /me, bare gin and ceiling (a) runs")
	fs.DurationVar(&cfg.SweepDuration, "sweep-duration", 5*time.Second, "length of each -tenants sweep run after the first")
	fs.DurationVar(&cfg.SweepWarmup, "sweep-warmup", 3*time.Minute, "longest unmeasured warm-up before each sweep run after the first (see -sweep-warmup-sends); 0 to skip the warm-up")
	fs.IntVar(&cfg.SweepRounds, "sweep-rounds", 3, "rounds of each sweep entry after the first: a round runs the first tenant count and then the entry's, each for -sweep-duration, back to back; "+
		"the entry's ratio is the median of the rounds' (the machine drifts by more than the ratio's tolerance between runs minutes apart)")
	fs.IntVar(&cfg.WebhookRounds, "webhook-rounds", 3, "rounds of the service's closed loop over the first -tenants count without and with one webhook endpoint per tenant (a local receiver), for -sweep-duration each, back to back, "+
		"then the webhooks' delivery to the receiver; 0 to skip")
	fs.IntVar(&cfg.WebhookSlices, "webhook-slices", 20, "after the webhook rounds, one closed loop over the first -tenants count cut into this many slices of -webhook-slice, its endpoints subscribed to every event "+
		"in half of them and to none the run emits in the other half (ABBA order), so that both share the machine's drift; a multiple of 4, 0 to skip")
	fs.DurationVar(&cfg.WebhookSlice, "webhook-slice", 500*time.Millisecond, "length of each -webhook-slices slice")
	fs.IntVar(&cfg.PairRounds, "pair-rounds", 3, "rounds of the service's closed loop against ceiling (a), both over the first -tenants count for -sweep-duration each, back to back while the service runs "+
		"(the order alternates); the median of the rounds' ratios is the acceptance target's figure, beside the single runs' (0 skips them)")
	fs.Float64Var(&cfg.SweepWarmupSends, "sweep-warmup-sends", 1, "warm-up sends per (tenant, pool connection) pair before each sweep run after the first, its messages delivered before the run: "+
		"a Postgres backend's first statements on a tenant's tables load their catalog entries (about 1 ms each), and a running service's connections have seen its tenants; "+
		"each send touches tenant tables in about four statements, so 1 leaves about 2% of the pairs unseen")
	fs.Float64Var(&cfg.OpenRate, "rate", 0, "open-loop sends/s; 0 means half the closed-loop rate just measured")
	fs.IntVar(&cfg.Backlog, "backlog", 10000, "jobs of ceiling (b), and messages of the delivery drain")
	fs.IntVar(&cfg.DBMaxConns, "db-max-conns", 10, "DB_MAX_CONNS of the service, and the pool size of the ceilings")
	fs.StringVar(&cfg.LogLevel, "log-level", "info", "LOG_LEVEL of the service (info logs every request, as in production)")
	fs.IntVar(&cfg.FixtureConcurrency, "fixture-concurrency", 4, "tenants provisioned at once while building the fixtures")
	fs.DurationVar(&cfg.DeliveryTimeout, "delivery-timeout", 3*time.Minute, "how long to wait for accepted messages to be sent")
	keep := scratchFlags(fs, &cfg.Database, "send")
	fs.IntVar(&cfg.DrainWorkers, "drain-workers", 3, "after the 1-worker drain, platform worker processes that drain -backlog messages to as many recipients (their rate beside one worker's on the same backlog, goal >= 90% of it), "+
		"then -backlog over -recipients (beside the 1-worker drain), then the -conversation backlog; 0 skips them")
	fs.IntVar(&cfg.DrainWorkerConns, "drain-worker-conns", 6, "DB_MAX_CONNS of each -drain-workers process")
	fs.IntVar(&cfg.Conversation, "conversation", 200, "messages of the deep conversation: one sender to one recipient, accepted one after the other by platform api, then delivered by the -drain-workers processes; 0 skips it")
	fs.Float64Var(&cfg.ConversationRate, "conversation-rate", 20, "sender_rate of the deep conversation's organization (its sender's throttle, messages/s)")
	fs.IntVar(&cfg.ConversationBurst, "conversation-burst", 40, "sender_burst of the deep conversation's organization")
	out := fs.String("out", "", "also write the results as JSON to this file")
	citus := fs.Bool("citus", false, "after the run on DATABASE_URL's server, start a local 3-node Citus cluster (scripts/citus-cluster, on free ports), run the same phases with the scratch database on its coordinator "+
		"(every tenant schema distributed to a worker), stop the cluster, and print both runs and the sweep side by side (-out: both reports; -keep keeps the stopped cluster's directory)")
	citusScript := fs.String("citus-script", "scripts/citus-cluster", "the cluster script -citus runs")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the service during the closed-loop send to this file, one during GET /api/v1/me to this file + \".me\", one during the first webhook round's run with an endpoint to this file + \".webhooks\", and one of the worker during the drain to this file + \".drain\" (the service runs with PPROF_ADDR on a loopback port)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if cfg.Tenants, err = parseTenantList(*tenantList); err != nil {
		return err
	}
	switch {
	case cfg.Senders < 1 || cfg.Senders > 100:
		return errors.New("-senders must be from 1 to 100")
	case cfg.Recipients < 1, cfg.Concurrency < 1, cfg.Backlog < 2, cfg.DBMaxConns < 2:
		return errors.New("-recipients, -concurrency must be positive, -backlog and -db-max-conns at least 2")
	case cfg.Duration < time.Second || cfg.SweepDuration < time.Second:
		return errors.New("-duration and -sweep-duration must be at least 1s")
	case cfg.SweepWarmup < 0 || cfg.SweepWarmupSends < 0:
		return errors.New("-sweep-warmup and -sweep-warmup-sends must not be negative")
	case cfg.SweepRounds < 1:
		return errors.New("-sweep-rounds must be at least 1")
	case cfg.PairRounds < 0 || cfg.WebhookRounds < 0:
		return errors.New("-pair-rounds and -webhook-rounds must not be negative")
	case cfg.WebhookSlices < 0 || cfg.WebhookSlices%4 != 0:
		return errors.New("-webhook-slices must be a multiple of 4 (0 to skip)")
	case cfg.WebhookSlices > 0 && cfg.WebhookSlice < 100*time.Millisecond:
		return errors.New("-webhook-slice must be at least 100ms")
	case cfg.DrainWorkers < 0 || cfg.Conversation < 0:
		return errors.New("-drain-workers and -conversation must not be negative")
	case cfg.DrainWorkers > 0 && cfg.DrainWorkerConns < 2:
		return errors.New("-drain-worker-conns must be at least 2")
	case cfg.DrainWorkers > 0 && cfg.Conversation > 0 && (cfg.ConversationRate <= 0 || cfg.ConversationBurst < 1):
		return errors.New("-conversation-rate must be positive and -conversation-burst at least 1")
	}
	command := "platform bench send " + strings.Join(args, " ")
	if *citus {
		return benchSendCitus(ctx, cfg, command, *citusScript, *cpuProfile, *keep, stdout, stderr, *out)
	}
	b := &sendBench{cfg: cfg, stderr: stderr, cpuProfile: *cpuProfile}
	rep, err := b.run(ctx, command, *keep)
	return finish(stdout, *out, rep, err, printSendReport)
}

// sendBench runs one benchmark.
type sendBench struct {
	cfg        sendConfig
	stderr     io.Writer
	cpuProfile string

	scratch
	tenants []benchTenant
	// checkpointErr is why a CHECKPOINT (after the fixtures or the
	// ceilings) failed, the first time one did.
	checkpointErr string
	prog          *progress
}

// serviceEnv is the environment of the service under test: the scratch
// database, the fixtures' pepper, and limits high enough never to bind.
func (b *sendBench) serviceEnv() []string {
	// The webhook phase's receiver listens on loopback.
	return b.env(b.cfg.DBMaxConns, b.cfg.LogLevel, "WEBHOOK_ALLOW_PRIVATE=true")
}

// startProfiled is startChild with serviceEnv, plus a loopback PPROF_ADDR
// (also returned) when -cpuprofile asks for profiles.
func (b *sendBench) startProfiled(ctx context.Context, args []string, serves bool) (*child, string, error) {
	env, addr := b.serviceEnv(), ""
	if b.cpuProfile != "" {
		var err error
		if addr, err = freeAddr(); err != nil {
			return nil, "", err
		}
		env = append(env, "PPROF_ADDR="+addr)
	}
	c, err := startChild(ctx, args, env, serves)
	return c, addr, err
}

func (b *sendBench) run(ctx context.Context, command string, keep bool) (*sendReport, error) {
	started := time.Now()
	rep := &sendReport{Command: command, StartedAt: started.UTC(), Config: b.cfg, CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	closeScratch, err := b.open(ctx, b.cfg.Database, int32(b.cfg.DBMaxConns), keep)
	if err != nil {
		return nil, err
	}
	defer closeScratch()
	b.prog = newProgress(b.stderr)
	defer b.prog.close()

	if err := b.setup(ctx); err != nil {
		return nil, err
	}
	first := b.tenants[:b.cfg.Tenants[0]]
	if rep.Server, err = readServerSettings(ctx, b.d, first[0].Tenant); err != nil {
		return nil, err
	}
	if b.citus != nil {
		p, err := readPlacement(ctx, b.d, b.tenants)
		if err != nil {
			return nil, err
		}
		rep.Citus = &p
	}

	// The ceilings, with no service running.
	pool, err := ceilingPool(ctx, b.url, b.cfg.DBMaxConns, slices.Max(b.cfg.Tenants))
	if err != nil {
		return rep, err
	}
	defer pool.Close()
	p := b.prog.phase(fmt.Sprintf("ceiling (a) raw Postgres, %d tenant(s)", len(first)))
	if rep.CeilingPostgres, rep.CeilingWAL, err = ceilingRun(ctx, pool, first, b.cfg.Concurrency, b.cfg.Duration, p); err != nil {
		return rep, err
	}
	if rep.CeilingSweep, err = b.ceilingSweep(ctx, pool); err != nil {
		return rep, err
	}
	// Each of the ceiling's connections prepared an insert in every tenant:
	// close them (the paired rounds open new ones), as forget does the
	// bench's.
	pool.Reset()
	p = b.prog.phase(fmt.Sprintf("ceiling (b) River alone, %d jobs", b.cfg.Backlog))
	if rep.CeilingRiver, err = ceilingRiver(ctx, b.d, b.cfg.Backlog, p); err != nil {
		return rep, err
	}
	if rep.CeilingGin, err = b.bareGin(ctx); err != nil {
		return rep, err
	}
	// Ceiling (a)'s rounds write a message and a job in every tenant and
	// delete them again, and write hundreds of megabytes of WAL. Left
	// alone, that is autovacuum's work for the next minutes (about 2,000
	// tables with 1,000 tenants, vacuumed under the service's first
	// phases) and a checkpoint (max_wal_size) under the open loop (two
	// full runs before this: p99 57.8 and 64.3 ms). The ceilings are not
	// the service's work: vacuum what they left and checkpoint, so that
	// the measured phases start from a settled database
	// (docs/performance.md, §Settling the database).
	if err := b.settle(ctx); err != nil {
		return rep, err
	}
	rep.FixtureCheckpoint = b.checkpointErr

	// The service.
	if err := b.service(ctx, rep, pool); err != nil {
		return rep, err
	}
	if err := b.drain(ctx, rep); err != nil {
		return rep, err
	}
	if err := b.drainWorkers(ctx, rep); err != nil {
		return rep, err
	}
	rep.Targets = targets(rep)
	rep.Elapsed = time.Since(started).Seconds()
	checks := append([]deliveryResult{rep.Delivery, rep.OpenDelivery, rep.DrainCheck}, sweepDeliveries(rep.Sweep)...)
	for _, r := range rep.Paired {
		checks = append(checks, r.Delivery)
	}
	for _, e := range checks {
		if !e.ExactlyOnce {
			return rep, fmt.Errorf("exactly-once check failed: accepted %d, rows %d, sent %d, network rows %d",
				e.Accepted, e.Rows, e.Sent, e.NetworkRows)
		}
	}
	for i, w := range rep.Webhooks {
		if !w.Complete {
			return rep, fmt.Errorf("webhook round %d: the receiver took %d webhooks of %d (two per accepted message) within -delivery-timeout",
				i+1, w.Webhooks, 2*w.With.OK)
		}
	}
	if w := rep.DrainWorkers; w != nil {
		if err := w.check(); err != nil {
			return rep, err
		}
	}
	if w := rep.WebhookSlices; w != nil && !w.Complete {
		return rep, fmt.Errorf("interleaved webhook slices: the receiver took %d webhooks of %d within -delivery-timeout (at least 10 ms a webhook)", w.Webhooks, w.Expected)
	}
	return rep, nil
}

func sweepDeliveries(s []sweepEntry) []deliveryResult {
	out := make([]deliveryResult, 0, len(s))
	for _, e := range s {
		out = append(out, e.Delivery)
		for _, r := range e.Rounds {
			out = append(out, r.BaseDelivery, r.Delivery)
		}
	}
	return out
}

// recipientAccounts is how many recipients the fixtures register on the
// network: -recipients, or the spread drains' one per message when more.
func (b *sendBench) recipientAccounts() int {
	if b.cfg.DrainWorkers > 0 {
		return max(b.cfg.Recipients, b.spreadRecipients())
	}
	return b.cfg.Recipients
}

// setup migrates the scratch database and builds the fixtures.
func (b *sendBench) setup(ctx context.Context) error {
	n := 0
	for _, t := range b.cfg.Tenants {
		n = max(n, t)
	}
	p := b.prog.phase(fmt.Sprintf("fixtures: %d tenants x %d senders", n, b.cfg.Senders))
	f, err := newFixtures(ctx, b.d, b.pepper, fixtureConfig{
		Tenants: n, Senders: b.cfg.Senders, Recipients: b.recipientAccounts(),
		Concurrency: b.cfg.FixtureConcurrency, DailyLimit: 100000000,
	}, true)
	if err != nil {
		return err
	}
	b.tenants, err = f.build(ctx, func(done int) { p(int64(done)) })
	if err != nil {
		return err
	}
	if _, err = b.d.Pool.Exec(ctx, "ANALYZE"); err != nil {
		return fmt.Errorf("analyze the fixtures: %w", err)
	}
	// Provisioning 1,000 tenants writes about a gigabyte of WAL, which
	// starts a checkpoint (max_wal_size) that would spend the next minutes
	// writing the fixtures' pages under the measured phases (the open
	// loop's p99 was 38-100 ms when one overlapped it, 19 ms when none
	// did). Checkpoints of the benchmark's own writes still count.
	b.checkpoint(ctx, "the fixtures")
	b.forget()
	return nil
}

// forget closes the bench's own connections (pgxpool's Reset; new ones
// open as needed) after work that read or wrote many tenant schemas: a
// Postgres backend keeps every relation it touched in its caches, about
// 175 kB a tenant schema, and the service's DB_MAX_CONN_TENANTS bound is
// not the bench's. One bench connection that had built 10,000 tenants'
// fixtures and then counted their messages grew to 4.3 GB and was killed
// by the kernel's OOM killer, taking the server into recovery.
func (b *sendBench) forget() { b.d.Pool.Reset() }

// forgetAbove is how many tenants a wait or count may read before forget:
// 1,000 tenants' messages tables are tens of megabytes of a backend's
// cache, and the 1-tenant runs keep their warm connections.
const forgetAbove = 1000

// settle runs VACUUM (ANALYZE) over the scratch database, waits (a minute
// at most) for autovacuum workers still busy in it to finish, then
// checkpoints. Autovacuum starts its round at the same time as the VACUUM
// often enough, and goes on through tables the VACUUM already did.
func (b *sendBench) settle(ctx context.Context) error {
	b.prog.phase("vacuum after the ceilings")(0)
	if _, err := b.d.Pool.Exec(ctx, "VACUUM (ANALYZE)"); err != nil {
		return fmt.Errorf("vacuum after the ceilings: %w", err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var busy int
		if err := b.d.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE backend_type = 'autovacuum worker' AND datname = current_database()`).Scan(&busy); err != nil {
			return fmt.Errorf("autovacuum workers: %w", err)
		}
		if busy == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	b.checkpoint(ctx, "the ceilings")
	b.forget()
	return nil
}

// checkpoint runs CHECKPOINT after a phase that is not the service's own
// work (the fixtures, the ceilings), so that the WAL it wrote does not start
// a checkpoint under the service's measured phases. It keeps the first
// refusal (CHECKPOINT needs superuser or pg_checkpoint) for the report.
func (b *sendBench) checkpoint(ctx context.Context, after string) {
	b.prog.phase("checkpoint after " + after)(0)
	b.checkpointNow(ctx)
}

// checkpointNow runs CHECKPOINT, keeping the first refusal for the report.
func (b *sendBench) checkpointNow(ctx context.Context) {
	if _, err := b.d.Pool.Exec(ctx, "CHECKPOINT"); err != nil && b.checkpointErr == "" {
		b.checkpointErr = err.Error()
	}
}

// sendRequests builds POST /api/v1/messages requests spread round-robin over
// tenants, then each tenant's senders, and over the recipients, all tagged
// with client_reference tag.
func (b *sendBench) sendRequests(addr string, tenants []benchTenant, tag string) loadRequest {
	return b.sendRequestsTo(addr, tenants, tag, b.cfg.Recipients)
}

// sendRequestsTo is sendRequests over the first recipients recipients.
func (b *sendBench) sendRequestsTo(addr string, tenants []benchTenant, tag string, recipients int) loadRequest {
	url := "http://" + addr + "/api/v1/messages"
	return func(i int64) (*http.Request, error) {
		bt := tenants[int(i%int64(len(tenants)))]
		sender := bt.Senders[int(i/int64(len(tenants)))%len(bt.Senders)]
		body := fmt.Sprintf(`{"to_phone":%q,"type":"text","sender_number_id":%d,"content":"Hello from the benchmark, message %d","client_reference":%q}`,
			recipientPhone(int(i%int64(recipients))), sender, i, tag)
		// The load generator gives each request its run's context.
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Api-Key", bt.APIKey)
		return req, nil
	}
}

// meRequests builds GET /api/v1/me requests spread over tenants.
func meRequests(addr string, tenants []benchTenant) loadRequest {
	url := "http://" + addr + "/api/v1/me"
	return func(i int64) (*http.Request, error) {
		// The load generator gives each request its run's context.
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		if tenants != nil {
			req.Header.Set("X-Api-Key", tenants[int(i%int64(len(tenants)))].APIKey)
		}
		return req, nil
	}
}

// bareGin is ceiling (c).
func (b *sendBench) bareGin(ctx context.Context) (loadResult, error) {
	addr, err := freeAddr()
	if err != nil {
		return loadResult{}, err
	}
	c, err := startChild(ctx, []string{"bench", "bare-gin", "-addr", addr}, nil, false)
	if err != nil {
		return loadResult{}, err
	}
	c.addr = addr
	if err := waitReady(ctx, c); err != nil {
		return loadResult{}, errors.Join(err, c.stop())
	}
	g := newLoadGen(b.cfg.Concurrency, http.StatusOK)
	defer g.close()
	g.progress = b.prog.phase("ceiling (c) bare gin JSON handler")
	res, err := g.closed(ctx, b.cfg.Concurrency, b.cfg.Duration, meRequests(addr, nil), nil)
	return res, errors.Join(err, c.stop())
}

// waitReady waits for a child started without the HTTP wait to answer.
func waitReady(ctx context.Context, c *child) error {
	client := &http.Client{Timeout: time.Second}
	ready, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.addr+"/readyz", nil)
	if err != nil {
		return err
	}
	for range 200 {
		resp, err := client.Do(ready)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not ready; log: %s", c.cmd.Args[1], c.tail())
}

// service runs the phases against platform serve.
func (b *sendBench) service(ctx context.Context, rep *sendReport, pool *pgxpool.Pool) (err error) {
	svc, pprofAddr, err := b.startProfiled(ctx, []string{"serve"}, true)
	if err != nil {
		return err
	}
	defer func() {
		if rss, rerr := svc.peakRSS(); rerr == nil {
			rep.PeakRSSBytes = rss
		} else {
			err = errors.Join(err, rerr)
		}
		svc.keep = err != nil // the service's log may say why
		err = errors.Join(err, svc.stop())
	}()
	g := newLoadGen(b.cfg.Concurrency*4, http.StatusAccepted)
	defer g.close()
	first := b.tenants[:b.cfg.Tenants[0]]
	g.scope = func() cpuSnapshot { return scopeCPU(b.cfg.Database, svc.cmd.Process.Pid) }

	// Closed loop: accepted sends/s and latency under full load.
	var prof <-chan error
	if b.cpuProfile != "" {
		prof = grabProfile(pprofAddr, max(int(b.cfg.Duration.Seconds())-1, 1), b.cpuProfile)
	}
	// watch samples the backends each second through each tenant count's
	// runs; the deferred call ends the last one when a run fails.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	watch := watchBackends(ctx, b.d, svc.cmd.Process.Pid, tick.C)
	defer func() { watch() }()
	g.progress = b.prog.phase(fmt.Sprintf("send closed loop, %d tenant(s), %d clients", len(first), b.cfg.Concurrency))
	if rep.Send, err = g.closed(ctx, b.cfg.Concurrency, b.cfg.Duration, b.sendRequests(svc.addr, first, "bench-closed"), nil); err != nil {
		return err
	}
	if prof != nil {
		if err := <-prof; err != nil {
			return err
		}
	}
	if rep.Delivery, err = b.delivered(ctx, first, "bench-closed", rep.Send.OK); err != nil {
		return err
	}
	firstMemory := measureMemory(ctx, b.d, svc.cmd.Process.Pid)
	firstMemory.BackendsAnonPeak = watch()

	// Open loop at a fixed rate: latency below saturation.
	rate := b.cfg.OpenRate
	defaults.Positive(&rate, max(rep.Send.Rate/2, 1))
	g.progress = b.prog.phase(fmt.Sprintf("send open loop at %.0f/s", rate))
	cps, err := rep.Server.checkpoints(ctx, b.d)
	if err != nil {
		return err
	}
	if rep.Open, err = g.open(ctx, b.cfg.Concurrency*4, rate, b.cfg.Duration, b.sendRequests(svc.addr, first, "bench-open")); err != nil {
		return err
	}
	if rep.OpenCheckpoints, err = rep.Server.checkpoints(ctx, b.d); err != nil {
		return err
	}
	rep.OpenCheckpoints -= cps
	open, err := b.delivered(ctx, first, "bench-open", rep.Open.OK)
	if err != nil {
		return err
	}
	rep.OpenDelivery = open

	// GET /me against the bare gin handler's figure.
	gm := newLoadGen(b.cfg.Concurrency, http.StatusOK)
	defer gm.close()
	gm.scope = g.scope
	gm.progress = b.prog.phase("GET /api/v1/me closed loop")
	if b.cpuProfile != "" {
		prof = grabProfile(pprofAddr, max(int(b.cfg.Duration.Seconds())-1, 1), b.cpuProfile+".me")
	}
	if rep.Me, err = gm.closed(ctx, b.cfg.Concurrency, b.cfg.Duration, meRequests(svc.addr, first), nil); err != nil {
		return err
	}
	if prof != nil {
		if err := <-prof; err != nil {
			return err
		}
	}

	if rep.Paired, rep.PairedRatio, err = b.paired(ctx, g, svc.addr, pool); err != nil {
		return err
	}
	if rep.Webhooks, rep.WebhookRatio, rep.WebhookSlices, err = b.webhooks(ctx, g, svc.addr, pprofAddr, rep.Server); err != nil {
		return err
	}
	rep.WebhookCPURatio = medianRatio(rep.Webhooks, func(r webhookRound) float64 { return r.CPURatio })
	rep.WebhookRatioLow, rep.WebhookRatioHigh = medianInterval(rep.Webhooks, func(r webhookRound) float64 { return r.Ratio })

	// The tenant sweep: the first entry is the closed-loop run above.
	sweep := []sweepEntry{{Tenants: len(first), Send: rep.Send, Delivery: rep.Delivery, Ratio: 1, Me: rep.Me, MeRatio: 1, Memory: firstMemory}}
	for _, n := range b.cfg.Tenants[1:] {
		ts := b.tenants[:n]
		tag := "bench-sweep-" + strconv.Itoa(n)
		watch = watchBackends(ctx, b.d, svc.cmd.Process.Pid, tick.C)
		if sends := int64(b.cfg.SweepWarmupSends * float64(n*b.cfg.DBMaxConns)); b.cfg.SweepWarmup > 0 && sends > 0 {
			warm := "bench-warmup-" + strconv.Itoa(n)
			g.progress = b.prog.phase(fmt.Sprintf("warm-up, %d tenants, %d sends", n, sends))
			res, err := g.closed(ctx, b.cfg.Concurrency, b.cfg.SweepWarmup, b.sendRequests(svc.addr, ts, warm),
				func(ok int64) bool { return ok >= sends })
			if err != nil {
				return err
			}
			if _, err := b.delivered(ctx, ts, warm, res.OK); err != nil {
				return err
			}
		}
		var rounds []sweepRound
		for r := range b.cfg.SweepRounds {
			var rd sweepRound
			round := fmt.Sprintf("sweep round %d/%d, ", r+1, b.cfg.SweepRounds)
			if rd.Base, rd.BaseDelivery, err = b.sweepRun(ctx, g, svc.addr, first, round, fmt.Sprintf("%s-base-r%d", tag, r)); err != nil {
				return err
			}
			if rd.Send, rd.Delivery, err = b.sweepRun(ctx, g, svc.addr, ts, round, fmt.Sprintf("%s-r%d", tag, r)); err != nil {
				return err
			}
			rd.Ratio = ratio(rd.Send.Rate, rd.Base.Rate)
			gm.progress = b.prog.phase(fmt.Sprintf("%sGET /api/v1/me, %d tenant(s)", round, len(first)))
			if rd.MeBase, err = gm.closed(ctx, b.cfg.Concurrency, b.cfg.SweepDuration, meRequests(svc.addr, first), nil); err != nil {
				return err
			}
			gm.progress = b.prog.phase(fmt.Sprintf("%sGET /api/v1/me, %d tenant(s)", round, n))
			if rd.Me, err = gm.closed(ctx, b.cfg.Concurrency, b.cfg.SweepDuration, meRequests(svc.addr, ts), nil); err != nil {
				return err
			}
			rd.MeRatio = ratio(rd.Me.Rate, rd.MeBase.Rate)
			rounds = append(rounds, rd)
		}
		med := medianBy(rounds, func(r sweepRound) float64 { return r.Ratio })
		meMed := medianBy(rounds, func(r sweepRound) float64 { return r.MeRatio })
		mem := measureMemory(ctx, b.d, svc.cmd.Process.Pid)
		mem.BackendsAnonPeak = watch()
		sweep = append(sweep, sweepEntry{Tenants: n, Send: med.Send, Delivery: med.Delivery, Ratio: med.Ratio,
			Me: meMed.Me, MeRatio: meMed.MeRatio, Rounds: rounds, Memory: mem})
	}
	rep.Sweep = sweep
	return nil
}

// paired measures the service's closed loop against ceiling (a) over the
// first -tenants count in -pair-rounds rounds, each run -sweep-duration,
// back to back while the service runs (idle during ceiling (a): what it
// accepted before is delivered). Rounds alternate which runs first, and
// after ceiling (a) its rows are deleted and the tables it wrote vacuumed,
// as before the service's first phase. It returns the rounds and the
// median of their ratios.
func (b *sendBench) paired(ctx context.Context, g *loadGen, addr string, pool *pgxpool.Pool) ([]pairedRound, float64, error) {
	first := b.tenants[:b.cfg.Tenants[0]]
	var rounds []pairedRound
	for r := range b.cfg.PairRounds {
		rd := pairedRound{CeilingFirst: r%2 == 0}
		round := fmt.Sprintf("paired round %d/%d, ", r+1, b.cfg.PairRounds)
		ceiling := func() error {
			p := b.prog.phase(fmt.Sprintf("%sceiling (a), %d tenant(s)", round, len(first)))
			var err error
			if rd.Ceiling, _, err = ceilingRun(ctx, pool, first, b.cfg.Concurrency, b.cfg.SweepDuration, p); err != nil {
				return err
			}
			return vacuumTenants(ctx, pool, first)
		}
		send := func() error {
			var err error
			rd.Send, rd.Delivery, err = b.sweepRun(ctx, g, addr, first, round, fmt.Sprintf("bench-paired-r%d", r))
			return err
		}
		if err := inTurn(rd.CeilingFirst, ceiling, send); err != nil {
			return rounds, 0, err
		}
		rd.Ratio = ratio(rd.Send.Rate, rd.Ceiling.Rate)
		rounds = append(rounds, rd)
	}
	return rounds, medianRatio(rounds, func(r pairedRound) float64 { return r.Ratio }), nil
}

// ceilingSweep measures ceiling (a) over each -tenants count after the
// first, as the service's sweep does: a warm-up of 3 × -sweep-warmup-sends
// transactions per (tenant, pool connection) pair, then -sweep-rounds rounds
// of the first count and this one for -sweep-duration each.
func (b *sendBench) ceilingSweep(ctx context.Context, pool *pgxpool.Pool) ([]ceilingSweepEntry, error) {
	first := b.tenants[:b.cfg.Tenants[0]]
	var out []ceilingSweepEntry
	for _, n := range b.cfg.Tenants[1:] {
		ts := b.tenants[:n]
		// Three times the service's warm-up: pgx prepares a tenant's insert
		// on a connection's first run of it, and 3 runs per pair leave about
		// 5% of the pairs unprepared (1 leaves 37%).
		if sends := int64(3 * b.cfg.SweepWarmupSends * float64(n*b.cfg.DBMaxConns)); b.cfg.SweepWarmup > 0 && sends > 0 {
			p := b.prog.phase(fmt.Sprintf("ceiling (a) warm-up, %d tenants, %d transactions", n, sends))
			if _, err := ceilingPostgres(ctx, pool, ts, b.cfg.Concurrency, b.cfg.SweepWarmup, p,
				func(ok int64) bool { return ok >= sends }); err != nil {
				return out, err
			}
			if err := cleanCeiling(ctx, pool, ts); err != nil {
				return out, err
			}
		}
		e := ceilingSweepEntry{Tenants: n}
		for r := range b.cfg.SweepRounds {
			var rd ceilingRound
			var err error
			round := fmt.Sprintf("ceiling (a) round %d/%d, ", r+1, b.cfg.SweepRounds)
			p := b.prog.phase(fmt.Sprintf("%s%d tenant(s)", round, len(first)))
			if rd.Base, rd.BaseWAL, err = ceilingRun(ctx, pool, first, b.cfg.Concurrency, b.cfg.SweepDuration, p); err != nil {
				return out, err
			}
			p = b.prog.phase(fmt.Sprintf("%s%d tenant(s)", round, n))
			if rd.Spread, rd.SpreadWAL, err = ceilingRun(ctx, pool, ts, b.cfg.Concurrency, b.cfg.SweepDuration, p); err != nil {
				return out, err
			}
			rd.Ratio = ratio(rd.Spread.Rate, rd.Base.Rate)
			e.Rounds = append(e.Rounds, rd)
		}
		med := medianBy(e.Rounds, func(r ceilingRound) float64 { return r.Ratio })
		e.Spread, e.Ratio = med.Spread, med.Ratio
		out = append(out, e)
	}
	return out, nil
}

// sweepRun is one closed-loop send of a sweep or paired round (round
// prefixes its progress line) over tenants ts, tagged tag, and the delivery
// of everything it accepted.
func (b *sendBench) sweepRun(ctx context.Context, g *loadGen, addr string, ts []benchTenant, round, tag string) (loadResult, deliveryResult, error) {
	g.progress = b.prog.phase(fmt.Sprintf("%ssend closed loop, %d tenant(s)", round, len(ts)))
	res, err := g.closed(ctx, b.cfg.Concurrency, b.cfg.SweepDuration, b.sendRequests(addr, ts, tag), nil)
	if err != nil {
		return res, deliveryResult{}, err
	}
	dr, err := b.delivered(ctx, ts, tag, res.OK)
	return res, dr, err
}

// medianBy is the round with the median ratio (the lower middle one of an
// even count).
func medianBy[T any](rounds []T, ratio func(T) float64) T {
	sorted := slices.Clone(rounds)
	slices.SortFunc(sorted, func(a, b T) int { return cmp.Compare(ratio(a), ratio(b)) })
	return sorted[(len(sorted)-1)/2]
}

// medianRatio is the median ratio of rounds (medianBy), 0 without rounds.
func medianRatio[T any](rounds []T, ratioOf func(T) float64) float64 {
	if len(rounds) == 0 {
		return 0
	}
	return ratioOf(medianBy(rounds, ratioOf))
}

// medianInterval bounds the median of the distribution rounds' ratios are
// drawn from, at 95% confidence or more, without assuming its shape: the
// k-th smallest and the k-th largest ratio, k = intervalRank(n). Rounds
// that spread wide give a wide interval, so a median on one side of a
// target is read together with it. 0, 0 when there are too few rounds.
func medianInterval[T any](rounds []T, ratioOf func(T) float64) (low, high float64) {
	k := intervalRank(len(rounds))
	if k == 0 {
		return 0, 0
	}
	ratios := make([]float64, len(rounds))
	for i, r := range rounds {
		ratios[i] = ratioOf(r)
	}
	slices.Sort(ratios)
	return ratios[k-1], ratios[len(ratios)-k]
}

// intervalRank is the largest k such that the k-th smallest and the k-th
// largest of n values bound their distribution's median with probability
// at least 95%: 1 - 2·P(B ≤ k-1) ≥ 0.95 for B binomial(n, ½). 0 when no k
// does (fewer than six values).
func intervalRank(n int) int {
	k, below := 0, 0.0 // below: P(B ≤ k-1), growing with k
	p := math.Pow(0.5, float64(n))
	for i := 0; i < n/2; i++ {
		// p is P(B = i).
		if 2*(below+p) > 0.05 {
			break
		}
		below += p
		k = i + 1
		p = p * float64(n-i) / float64(i+1)
	}
	return k
}

// ratio is rate over base, 0 when base measured nothing.
func ratio(rate, base float64) float64 {
	if base <= 0 {
		return 0
	}
	return rate / base
}

// inTurn runs a paired round's two runs, a first when aFirst and else b
// first, so that rounds can alternate the order; it stops at the first
// error.
func inTurn(aFirst bool, a, b func() error) error {
	if !aFirst {
		a, b = b, a
	}
	if err := a(); err != nil {
		return err
	}
	return b()
}

// drain measures delivery capacity: platform api accepts -backlog messages
// with no worker running, then platform worker delivers them.
func (b *sendBench) drain(ctx context.Context, rep *sendReport) error {
	first := b.tenants[:b.cfg.Tenants[0]]
	api, err := startChild(ctx, []string{"api"}, b.serviceEnv(), true)
	if err != nil {
		return err
	}
	g := newLoadGen(b.cfg.Concurrency, http.StatusAccepted)
	defer g.close()
	g.scope = func() cpuSnapshot { return scopeCPU(b.cfg.Database, api.cmd.Process.Pid) }
	g.progress = b.prog.phase(fmt.Sprintf("drain: accepting %d messages (no workers)", b.cfg.Backlog))
	n := int64(b.cfg.Backlog)
	res, err := g.closed(ctx, b.cfg.Concurrency, 10*time.Minute, b.sendRequests(api.addr, first, "bench-drain"), func(ok int64) bool { return ok >= n })
	rep.DrainAccept = res
	if err = errors.Join(err, api.stop()); err != nil {
		return err
	}
	worker, pprofAddr, err := b.startProfiled(ctx, []string{"worker"}, false)
	if err != nil {
		return err
	}
	var prof <-chan error
	if b.cpuProfile != "" {
		// The first seconds of the drain: the worker at full speed.
		prof = grabProfile(pprofAddr, 5, b.cpuProfile+".drain")
	}
	p := b.prog.phase(fmt.Sprintf("drain: platform worker delivering %d messages", res.OK))
	cpu := scopeCPU(b.cfg.Database, worker.cmd.Process.Pid)
	rep.Drain, err = waitDrain(ctx, b.countTagged(first, "bench-drain", "status IN ('sent', 'delivered')", "sent_at"),
		res.OK, b.cfg.DeliveryTimeout, p)
	after := scopeCPU(b.cfg.Database, worker.cmd.Process.Pid)
	rep.DrainCPU = cpuPerMessage(after.since(cpu), res.OK)
	rep.DrainCPUWorker = cpuPerMessage(after.of(worker.cmd.Process.Pid).since(cpu), res.OK)
	if err == nil {
		err = b.finishJobs(ctx)
	}
	if prof != nil {
		err = errors.Join(err, <-prof)
	}
	if err = errors.Join(err, worker.stop()); err != nil {
		return fmt.Errorf("delivery drain: %w", err)
	}
	rep.DrainCheck, err = b.delivered(ctx, first, "bench-drain", res.OK)
	return err
}

// unionTag selects cols from the messages tagged tag of every tenant.
func unionTag(tenants []benchTenant, cols, tag string) string {
	var sb strings.Builder
	for i, bt := range tenants {
		if i > 0 {
			sb.WriteString(" UNION ALL ")
		}
		fmt.Fprintf(&sb, "SELECT %s, %s AS schema_name FROM %s WHERE client_reference = '%s'",
			cols, quoteLiteral(bt.Tenant.Schema), bt.Tenant.Table("messages"), tag)
	}
	return sb.String()
}

// taggedChunk is how many tenants one statement of the delivery checks
// reads. A statement locks each tenant's messages table and every index of
// it until its transaction ends, and the server's lock table is shared by
// every session (max_locks_per_transaction × max_connections: 6,400 by
// default): one statement over 1,000 tenants' 7 relations each ran out of
// it ("out of shared memory").
const taggedChunk = 100

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// countTagged counts the messages tagged tag that match where, over the
// tenants in chunks of taggedChunk, with the least and the greatest at.
func (b *sendBench) countTagged(tenants []benchTenant, tag, where, at string) counter {
	return func(ctx context.Context) (int64, *time.Time, *time.Time, error) {
		var (
			total       int64
			first, last *time.Time
		)
		for chunk := range sliceChunks(tenants, taggedChunk) {
			n, f, l, err := countQuery(b.d, `SELECT count(*), min(`+at+`), max(`+at+`) FROM (`+
				unionTag(chunk, "status, sent_at", tag)+`) m WHERE `+where)(ctx)
			if err != nil {
				return 0, nil, nil, err
			}
			total += n
			if f != nil && (first == nil || f.Before(*first)) {
				first = f
			}
			if l != nil && (last == nil || l.After(*last)) {
				last = l
			}
		}
		return total, first, last, nil
	}
}

// awaitSent waits until every one of the accepted messages tagged tag is
// sent or failed.
func (b *sendBench) awaitSent(ctx context.Context, tenants []benchTenant, tag string, accepted int64) error {
	if len(tenants) > forgetAbove {
		defer b.forget()
	}
	p := b.prog.phase(fmt.Sprintf("waiting for %d %s messages to be sent", accepted, tag))
	if _, err := waitDrain(ctx, b.countTagged(tenants, tag, "status <> 'queued'", "coalesce(sent_at, now())"),
		accepted, b.cfg.DeliveryTimeout, p); err != nil {
		return fmt.Errorf("%s: %w", tag, err)
	}
	return nil
}

// delivered waits until every message tagged tag is sent or failed
// (awaitSent), then measures delivery and checks that each accepted message
// reached the network exactly once. The figures are computed on one connection over a
// temporary copy of the tagged messages, filled taggedChunk tenants at a
// time.
func (b *sendBench) delivered(ctx context.Context, tenants []benchTenant, tag string, accepted int64) (deliveryResult, error) {
	if len(tenants) > forgetAbove {
		defer b.forget()
	}
	if err := b.awaitSent(ctx, tenants, tag, accepted); err != nil {
		return deliveryResult{}, err
	}
	r := deliveryResult{Accepted: accepted}
	conn, err := b.d.Pool.Acquire(ctx)
	if err != nil {
		return r, fmt.Errorf("delivery figures: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS bench_tagged
		(id bigint, status text, created_at timestamptz, sent_at timestamptz, schema_name text);
		TRUNCATE bench_tagged`); err != nil {
		return r, fmt.Errorf("delivery figures: %w", err)
	}
	for chunk := range sliceChunks(tenants, taggedChunk) {
		if _, err := conn.Exec(ctx, `INSERT INTO bench_tagged `+unionTag(chunk, "id, status, created_at, sent_at", tag)); err != nil {
			return r, fmt.Errorf("delivery figures: %w", err)
		}
	}
	var first, last *time.Time
	var p50, p99 *float64
	// The built-in network delivers as it takes a message: sent and
	// delivered both count as taken by the network.
	err = conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status IN ('sent', 'delivered')),
		min(created_at), max(sent_at),
		percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM sent_at - created_at)),
		percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM sent_at - created_at)),
		(SELECT count(*) FROM network.messages n JOIN bench_tagged u ON n.reference = u.schema_name || ':' || u.id)
		FROM bench_tagged m`).Scan(&r.Rows, &r.Sent, &first, &last, &p50, &p99, &r.NetworkRows)
	if err != nil {
		return r, fmt.Errorf("delivery figures: %w", err)
	}
	if first != nil && last != nil && last.After(*first) {
		r.Rate = float64(r.Sent) / last.Sub(*first).Seconds()
	}
	if p50 != nil && p99 != nil {
		r.LagP50, r.LagP99 = roundMS(*p50*1000), roundMS(*p99*1000)
	}
	r.ExactlyOnce = r.Accepted == r.Rows && r.Rows == r.Sent && r.Sent == r.NetworkRows
	return r, nil
}

func roundMS(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }

// manyTenantGoal is the share of the same run's 1-tenant rate that the
// service's sends/s over n tenants should reach (docs/performance.md,
// §Targets); ok is false for a count without a target.
func manyTenantGoal(n int) (goal float64, ok bool) {
	switch n {
	case 1000:
		return 0.7, true
	case 10000:
		return 0.5, true
	}
	return 0, false
}

// thousands writes n with a comma between thousands (1,000; 10,000).
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// targets compares the figures with the targets.
func targets(r *sendReport) []target {
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return roundMS(a / b * 100)
	}
	out := []target{
		atLeast("accepted sends/s vs ceiling (a) raw Postgres, %", ratio(r.Send.Rate, r.CeilingPostgres.Rate), 50),
		atLeast("  same, platform api alone (no delivery), %", ratio(r.DrainAccept.Rate, r.CeilingPostgres.Rate), 50),
		atMost("open-loop p99 accept latency at half the closed rate, ms", r.Open.P99, 25, r.Open.OK > 0),
		atLeast("delivery drain vs ceiling (b) River alone, %", ratio(r.Drain.Rate, r.CeilingRiver.Rate), 50),
		atLeast("GET /me vs ceiling (c) bare gin, %", ratio(r.Me.Rate, r.CeilingGin.Rate), 25),
		atMost("service peak RSS, MB", roundMS(float64(r.PeakRSSBytes)/(1<<20)), 250, r.PeakRSSBytes > 0),
	}
	if len(r.Paired) > 0 {
		// The same comparison as the first, from runs back to back.
		out = slices.Insert(out, 1, atLeast("  same, paired rounds (median), %", roundMS(r.PairedRatio*100), 50))
	}
	if r.DrainWorkers != nil {
		out = append(out, workersTarget(r.DrainWorkers))
	}
	if len(r.Webhooks) > 0 {
		out = append(out, atLeast("sends/s with a webhook endpoint vs without (median), %", roundMS(r.WebhookRatio*100), 95))
	}
	if ws := r.WebhookSlices; ws != nil {
		out = append(out, atLeast("  same, interleaved slices, %", roundMS(ws.Ratio*100), 95))
	}
	if len(r.Sweep) == 0 || r.Sweep[0].Tenants != 1 {
		// No 1-tenant run to compare the counts with.
		return out
	}
	for _, e := range r.Sweep {
		goal, ok := manyTenantGoal(e.Tenants)
		if !ok {
			continue
		}
		// What tenancy costs the service: its rate over as many tenants
		// against one tenant's, the median of rounds run back to back,
		// delivered exactly once; and routing alone (key authentication,
		// the organization and one read, no tenant writes), flat when the
		// tenant's schema is found without cost.
		out = append(out,
			atLeast(fmt.Sprintf("sends/s over %s tenants vs 1 tenant (median round), x", thousands(e.Tenants)),
				roundMS(e.Ratio), goal, e.Delivery.ExactlyOnce),
			atLeast("  GET /me over as many vs 1 tenant (routing alone), %", roundMS(e.MeRatio*100), 90))
	}
	return out
}

// ceilingAt is the ceiling sweep's entry for n tenants.
func (r *sendReport) ceilingAt(n int) (ceilingSweepEntry, bool) {
	for _, c := range r.CeilingSweep {
		if c.Tenants == n {
			return c, true
		}
	}
	return ceilingSweepEntry{}, false
}

// meRounds lists the rounds' /me rates as "  (rounds: over/first, ...)".
func meRounds(rounds []sweepRound) string {
	if len(rounds) == 0 {
		return ""
	}
	parts := make([]string, len(rounds))
	for i, rd := range rounds {
		parts[i] = fmt.Sprintf("%.0f/%.0f", rd.Me.Rate, rd.MeBase.Rate)
	}
	return "  (rounds, /s over as many/just before: " + strings.Join(parts, ", ") + ")"
}

// printSendReport prints the figures as a table.
func printSendReport(w io.Writer, r *sendReport) {
	line := func(name, value string) { fmt.Fprintf(w, "%-52s %s\n", name, value) }
	lat := func(l loadResult) string {
		return fmt.Sprintf("p50 %.2f  p95 %.2f  p99 %.2f  max %.2f ms", l.P50, l.P95, l.P99, l.Max)
	}
	rate := func(l loadResult) string {
		s := fmt.Sprintf("%9.0f /s  (%d ok, %d errors in %.1fs, machine CPU %.0f%%)", l.Rate, l.OK, l.Errors, l.Elapsed.Seconds(), l.CPUBusy)
		if l.FirstError != "" {
			s += "  first error: " + l.FirstError
		}
		return s
	}
	fmt.Fprintf(w, "%s\n%d CPUs, %s, concurrency %d, %d sender(s)/tenant, pool %d, service LOG_LEVEL=%s\n",
		r.Command, r.CPUs, r.GoVersion, r.Config.Concurrency, r.Config.Senders, r.Config.DBMaxConns, r.Config.LogLevel)
	fmt.Fprintf(w, "Postgres %s: shared_buffers %s, max_files_per_process %d, synchronous_commit %s, autovacuum %s; %d relation files per tenant\n",
		r.Server.Version, r.Server.SharedBuffers, r.Server.MaxFiles, r.Server.CommitMode, r.Server.Autovacuum, r.Server.TenantRelFiles)
	if r.Citus != nil {
		fmt.Fprintf(w, "Citus cluster (coordinator and 2 workers, scripts/citus-cluster): %s\n", r.Citus)
	}
	if r.FixtureCheckpoint != "" {
		fmt.Fprintf(w, "warning: no CHECKPOINT after the fixtures and the ceilings (%s): their WAL may start a checkpoint during the measured phases\n", r.FixtureCheckpoint)
	}
	if n := slices.Max(r.Config.Tenants); r.Server.warning(n) != "" {
		fmt.Fprintln(w, r.Server.warning(n))
	}
	fmt.Fprintln(w)
	line("figure", "value")
	line(strings.Repeat("-", 52), strings.Repeat("-", 50))
	line("ceiling (a) raw Postgres: message + job tx/s", rate(r.CeilingPostgres))
	line("ceiling (b) River alone: no-op jobs/s", fmt.Sprintf("%9.0f /s  (%d jobs)", r.CeilingRiver.Rate, r.CeilingRiver.Jobs))
	line("ceiling (c) bare gin JSON handler: requests/s", rate(r.CeilingGin))
	if r.Send.OK > 0 || r.Send.Errors > 0 {
		line("accepted sends/s (closed loop, serve delivering)", rate(r.Send))
		line("  accept latency (closed loop)", lat(r.Send))
		line("  CPU per accepted message (closed loop)", fmt.Sprintf("%9.3f ms  (machine; service and its backends %.3f ms)", r.Send.CPUPerOK, r.Send.ScopeCPUPerOK))
		line(fmt.Sprintf("open loop at %.0f/s: accepted", r.Open.TargetRate), rate(r.Open))
		line("  accept latency (open loop, from schedule)", lat(r.Open)+fmt.Sprintf("  (%d checkpoint(s) started)", r.OpenCheckpoints))
		line("delivery throughput during the run (to sent)", fmt.Sprintf("%9.0f /s", r.Delivery.Rate))
		line("  lag accepted -> sent", fmt.Sprintf("p50 %.2f  p99 %.2f ms", r.Delivery.LagP50, r.Delivery.LagP99))
		line("  exactly once (accepted = rows = sent = network)", fmt.Sprintf("%v  (%d, %d, %d, %d)",
			r.Delivery.ExactlyOnce, r.Delivery.Accepted, r.Delivery.Rows, r.Delivery.Sent, r.Delivery.NetworkRows))
		line("GET /api/v1/me requests/s", rate(r.Me))
		line("  latency", lat(r.Me))
		line("  CPU per request", fmt.Sprintf("%9.3f ms  (machine; service and its backends %.3f ms)", r.Me.CPUPerOK, r.Me.ScopeCPUPerOK))
		if len(r.Paired) > 0 {
			line("accepted sends/s vs ceiling (a), paired rounds", fmt.Sprintf("%8.1f %%  (median of %d rounds back to back, %d tenant(s))",
				100*r.PairedRatio, len(r.Paired), r.Config.Tenants[0]))
			for i, rd := range r.Paired {
				order := "service, then ceiling (a)"
				if rd.CeilingFirst {
					order = "ceiling (a), then service"
				}
				line(fmt.Sprintf("  round %d", i+1), fmt.Sprintf("%8.1f %%  (%.0f /s against %.0f /s; %s; exactly once %v)",
					100*rd.Ratio, rd.Send.Rate, rd.Ceiling.Rate, order, rd.Delivery.ExactlyOnce))
			}
		}
		if len(r.Webhooks) > 0 {
			line("accepted sends/s with a webhook endpoint vs without", fmt.Sprintf("%8.1f %%  (median of %d rounds back to back, %d tenant(s))",
				100*r.WebhookRatio, len(r.Webhooks), r.Config.Tenants[0]))
			if r.WebhookRatioHigh > 0 {
				line("  the median's 95% confidence interval", fmt.Sprintf("%.1f-%.1f %%  (between rounds %d and %d of %d in order of their ratio)",
					100*r.WebhookRatioLow, 100*r.WebhookRatioHigh, intervalRank(len(r.Webhooks)), len(r.Webhooks)+1-intervalRank(len(r.Webhooks)), len(r.Webhooks)))
			}
			for i, rd := range r.Webhooks {
				line(fmt.Sprintf("  round %d", i+1), fmt.Sprintf("%8.1f %%  (%.0f /s with, %.0f /s without; CPU %.2f / %.2f ms a message; steal %.1f / %.1f %%; WAL %.1f / %.1f kB a message; batches of %.1f / %.1f acceptances, %.1f / %.1f deliveries; %d outbox rows expanded during the run; webhooks %d, %d during the run, then %.0f /s; %d yields; all arrived %v; %d checkpoint(s) started)",
					100*rd.Ratio, rd.With.Rate, rd.Without.Rate, rd.CPUWith, rd.CPUWithout, rd.StealWith, rd.StealWithout,
					rd.WorkWith.WALBytes/1000, rd.WorkWithout.WALBytes/1000, rd.WorkWith.AcceptBatch, rd.WorkWithout.AcceptBatch, rd.WorkWith.DeliverBatch, rd.WorkWithout.DeliverBatch, rd.WorkWith.OutboxRows,
					rd.Webhooks, rd.DuringRun, rd.DrainRate, rd.Yields, rd.Complete, rd.Checkpoints))
			}
			line("machine CPU per accepted message, without vs with", fmt.Sprintf("%8.1f %%  (median of the rounds: the rate kept on a saturated machine)",
				100*r.WebhookCPURatio))
		}
		if ws := r.WebhookSlices; ws != nil {
			blocks := make([]string, len(ws.BlockRatios))
			for i, x := range ws.BlockRatios {
				blocks[i] = fmt.Sprintf("%.1f", 100*x)
			}
			line("same, interleaved slices (events on / off)", fmt.Sprintf("%8.1f %%  (%d slices of %s: %.0f /s with, %.0f /s without; blocks of four %s %%)",
				100*ws.Ratio, ws.Slices, ws.Slice, ws.With.rate(), ws.Without.rate(), strings.Join(blocks, ", ")))
			line("  machine CPU per accepted message, without vs with", fmt.Sprintf("%8.1f %%  (%.2f / %.2f ms a message; webhooks %d of %d, %d during the run, then %.0f /s; all arrived %v)",
				100*ws.CPURatio, ws.With.cpuPerMessage(), ws.Without.cpuPerMessage(), ws.Webhooks, ws.Expected, ws.DuringRun, ws.DrainRate, ws.Complete))
		}
		line("service peak RSS (VmHWM)", fmt.Sprintf("%.1f MB", float64(r.PeakRSSBytes)/(1<<20)))
	}
	if r.Drain.Jobs > 0 {
		line("accepted sends/s, platform api alone (drain)", rate(r.DrainAccept))
		line("  accept latency (api alone)", lat(r.DrainAccept))
		line("  CPU per accepted message (api alone)", fmt.Sprintf("%9.3f ms  (machine; service and its backends %.3f ms)", r.DrainAccept.CPUPerOK, r.DrainAccept.ScopeCPUPerOK))
		line("delivery drain (platform worker, backlog)", fmt.Sprintf("%9.0f /s  (%d messages, exactly once %v; CPU a message: %.3f ms, the worker %.3f, its backends %.3f)",
			r.Drain.Rate, r.Drain.Jobs, r.DrainCheck.ExactlyOnce, r.DrainCPU, r.DrainCPUWorker, r.DrainCPU-r.DrainCPUWorker))
	}
	if w := r.DrainWorkers; w != nil && w.Spread.Drain.Jobs > 0 {
		w.print(line, r.Drain.Rate)
	}
	if len(r.Sweep) > 0 {
		fmt.Fprintln(w)
		line("tenants sweep", "sends/s, ratio to the first (median of the rounds), p99, delivery")
		for _, e := range r.Sweep {
			line(fmt.Sprintf("  %d tenant(s)", e.Tenants), fmt.Sprintf("%9.0f /s  x%.2f  p99 %.2f ms  delivered %.0f/s, exactly once %v",
				e.Send.Rate, e.Ratio, e.Send.P99, e.Delivery.Rate, e.Delivery.ExactlyOnce))
			for i, rd := range e.Rounds {
				line(fmt.Sprintf("    round %d", i+1), fmt.Sprintf("%9.0f /s  x%.2f  (%d tenant(s) just before: %.0f /s)",
					rd.Send.Rate, rd.Ratio, r.Sweep[0].Tenants, rd.Base.Rate))
			}
			line("    GET /api/v1/me over as many", fmt.Sprintf("%9.0f /s  x%.2f  p99 %.2f ms%s", e.Me.Rate, e.MeRatio, e.Me.P99, meRounds(e.Rounds)))
			line("    memory after it", e.Memory.String())
			if c, ok := r.ceilingAt(e.Tenants); ok {
				line("    ceiling (a) raw Postgres over as many", fmt.Sprintf("%9.0f /s  x%.2f  service %.1f%% of it",
					c.Spread.Rate, c.Ratio, 100*e.Send.Rate/max(c.Spread.Rate, 1)))
				for i, rd := range c.Rounds {
					line(fmt.Sprintf("      round %d", i+1), fmt.Sprintf("%9.0f /s  x%.2f  WAL %.0f B, %.2f full pages per tx (%d tenant(s) just before: %.0f /s, %.0f B, %.2f)",
						rd.Spread.Rate, rd.Ratio, rd.SpreadWAL.Bytes, rd.SpreadWAL.FPI, r.Sweep[0].Tenants, rd.Base.Rate, rd.BaseWAL.Bytes, rd.BaseWAL.FPI))
				}
			} else if e.Tenants == r.Sweep[0].Tenants {
				line("    ceiling (a) raw Postgres over as many", fmt.Sprintf("%9.0f /s  x1.00  service %.1f%% of it; WAL %.0f B, %.2f full pages per tx",
					r.CeilingPostgres.Rate, 100*e.Send.Rate/max(r.CeilingPostgres.Rate, 1), r.CeilingWAL.Bytes, r.CeilingWAL.FPI))
			}
		}
	}
	if len(r.Targets) > 0 {
		fmt.Fprintln(w)
		line("target", "measured   goal    met")
		for _, t := range r.Targets {
			line(t.Name, fmt.Sprintf("%8.2f   %-6s  %v", t.Value, t.Goal, t.Met))
		}
	}
}
