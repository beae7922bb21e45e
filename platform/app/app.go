// Package app assembles the whole service from its configuration: the database
// (created and migrated on first start), the HTTP engine with the Central and
// Tenant APIs, and the River workers. cmd/platform runs it; the integration
// tests run the same assembly in-process.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/central"
	"github.com/bizmsg/platform/docs"
	"github.com/bizmsg/platform/jobs"
	"github.com/bizmsg/platform/platform/acceptance"
	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/apidoc"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/audit"
	"github.com/bizmsg/platform/platform/campaignrelease"
	"github.com/bizmsg/platform/platform/campaigns"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/config"
	"github.com/bizmsg/platform/platform/consent"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/delivery"
	"github.com/bizmsg/platform/platform/devsecrets"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/joboutbox"
	"github.com/bizmsg/platform/platform/keys"
	"github.com/bizmsg/platform/platform/lookup"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/metrics"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/pace"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/templates"
	"github.com/bizmsg/platform/platform/usage"
	"github.com/bizmsg/platform/platform/webhooks"
	"github.com/bizmsg/platform/platform/yield"
	"github.com/bizmsg/platform/tenant"
	"github.com/bizmsg/platform/web"
)

// Options choose what the process runs, beyond the configuration.
type Options struct {
	// Config is the loaded configuration.
	Config config.Config
	// Logger is the process logger. Default slog.Default().
	Logger *slog.Logger
	// Clock is the time source. Default clock.Real{}.
	Clock clock.Clock
	// Workers runs the River workers in this process.
	Workers bool
	// Name is the process's application_name in Postgres (db.Config), such
	// as "bizmsg worker". Default "bizmsg".
	Name string
	// Jobs tunes the worker client.
	Jobs queue.Config
	// Network is the messaging network. Default: the one NETWORK names (the
	// built-in network in this database).
	Network network.Network
	// Outbox tunes the job outbox (tests set its hooks); the application
	// sets its database, statements, River client and logger.
	Outbox joboutbox.Config
	// OutboxOnOneServer keeps the job outbox's rows and moves on one
	// server, where the application otherwise has River insert the jobs
	// directly (joboutbox.Config.Direct): tests of the outbox itself.
	OutboxOnOneServer bool
	// Webhooks tunes the webhook service (tests shorten its timeout and
	// backoff); WEBHOOK_ALLOW_PRIVATE sets AllowPrivate.
	Webhooks webhooks.Config
	// Operator assembles the service for an operator command: the database
	// must exist and be migrated already (OpenExisting: nothing is created
	// or migrated, so a command pointed at the wrong server fails instead of
	// setting a database up there), and the development secrets are read
	// where the service kept them, never written, without a warning.
	Operator bool
}

// OpenExisting opens the database of an operator command: it must exist
// and be migrated to this binary's versions (the service, or platform
// migrate, sets it up); OpenExisting creates and migrates nothing, and its
// errors say which database it tried and what sets it up.
func OpenExisting(ctx context.Context, cfg config.Config, name string, maxConns int32, log *slog.Logger) (*db.DB, *migrate.Migrator, error) {
	if err := db.CheckDatabase(ctx, cfg.DatabaseURL); err != nil {
		if errors.Is(err, db.ErrNoDatabase) {
			return nil, nil, fmt.Errorf("%w: operator commands use the service's database; set DATABASE_URL to the one "+
				"the service runs with (platform serve or platform migrate creates and migrates it)", err)
		}
		return nil, nil, err
	}
	d, err := db.Open(ctx, db.Config{URL: cfg.DatabaseURL, MaxConns: maxConns, ApplicationName: name,
		MaxConnTenants: off(cfg.DBMaxConnTenants)})
	if err != nil {
		return nil, nil, err
	}
	m, err := migrate.New(migrate.Config{Pool: d.Pool, Logger: log})
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	current, err := m.Current(ctx)
	if err != nil || !current {
		d.Close()
		if err == nil {
			err = errors.New("is not migrated to this binary's version")
		}
		return nil, nil, fmt.Errorf("database %s: %w: run platform migrate (or start the service) with this binary first",
			db.Redact(cfg.DatabaseURL), err)
	}
	return d, m, nil
}

// App is the assembled service.
type App struct {
	cfg      config.Config
	log      *slog.Logger
	clock    clock.Clock
	DB       *db.DB
	Migrator *migrate.Migrator
	Metrics  *metrics.Metrics
	Engine   *gin.Engine
	// River is the process's one River client: it inserts jobs in the
	// transactions of the rows they belong to, reads them (the operator
	// console, a message's delivery), and, when the process runs workers,
	// works them.
	River *river.Client[pgx.Tx]
	// Outbox queues the jobs of the send path, the webhook outbox's
	// expansion and the campaigns' release in their tenant's job_outbox
	// and moves them into River (docs/scaling.md, §Jobs).
	Outbox *joboutbox.Outbox
	// workers is River's worker bundle when the process runs workers, filled
	// once the services the workers call exist.
	workers *river.Workers
	// jobs is the worker client's configuration, defaults applied.
	jobs queue.Config
	// rescuer frees the deliveries of a dead worker process (with workers).
	rescuer *queue.Rescuer
	// yield is the gate through which webhook attempts give way to the
	// API and the send path: their batches count their runs on it
	// (batches), the webhook service's attempts and outbox expansions
	// wait at it (webhookService). Built first, in New.
	yield *yield.Gate
	// pace holds the rates every process shares: the delivery throttle of
	// each sender number and the request rate of each API key.
	pace *pace.Store
	// Keys is the API-key service both APIs share.
	Keys *keys.Service
	// Accounts is the accounts service (registration, login, members).
	Accounts *accounts.Service
	// Audit reads the audit log (the services write it).
	Audit *audit.Service
	// TenantRoutes (/api/v1, X-Api-Key) and CentralRoutes (/api/v1/central,
	// Bearer) are the authenticated route groups; routes() mounts other
	// packages' handlers on them, with tenant.RequireScope and
	// central.RequireRole.
	TenantRoutes  *gin.RouterGroup
	CentralRoutes *gin.RouterGroup
	// Network is the messaging network (NETWORK).
	Network network.Network
	// Senders is the sender-number service both APIs and the workers share.
	Senders *senders.Service
	// Acceptance (sends), Delivery (the delivery worker's) and Messages
	// (receipts, inbound messages, history), with Lookup and Usage, are
	// the messaging services both APIs and the delivery worker share.
	Acceptance *acceptance.Service
	Delivery   *delivery.Service
	Messages   *messages.Service
	Lookup     *lookup.Service
	// Consent is the organizations' opt-out lists (platform/consent).
	Consent *consent.Service
	Usage   *usage.Service
	// Webhooks (endpoints, Emit, delivery) is the webhook service the
	// Tenant API, the services that emit events and the worker share.
	Webhooks *webhooks.Service
	// Templates (message templates and their review) is the template
	// service the Tenant API, the send path, the review worker and the
	// network's verdicts share.
	Templates *templates.Service
	// Campaigns (campaigns, their recipients and states) is the campaign
	// service of the Tenant API; CampaignRelease releases their
	// recipients (the campaign_release job's worker) as the pacing allows.
	Campaigns       *campaigns.Service
	CampaignRelease *campaignrelease.Service

	tenantAPI  *tenant.API
	centralAPI *central.API
	// apiDoc serves docs/openapi.yaml (and as JSON) and the reference page.
	apiDoc *apidoc.Docs
}

// New connects to the database (waiting for its server up to
// DB_CONNECT_TIMEOUT, creating the database if missing), migrates the central,
// network and river schemas, and builds the HTTP engine and, with
// opts.Workers, the River worker client; with opts.Operator it opens the
// existing database only (OpenExisting). Close releases what it opened.
// Unlike the components it builds it takes a context: it connects and
// migrates while it builds, and ctx bounds that.
func New(ctx context.Context, opts Options) (*App, error) {
	defaults.Logger(&opts.Logger)
	defaults.Clock(&opts.Clock)
	cfg := opts.Config
	a := &App{cfg: cfg, log: opts.Logger, clock: opts.Clock, Metrics: metrics.New(), Network: opts.Network}
	var err error
	if a.yield, err = yield.New(yield.Config{BusyRate: cfg.WebhookBusyRate}); err != nil {
		return nil, err
	}
	if opts.Operator {
		d, m, err := OpenExisting(ctx, cfg, opts.Name, cfg.DBMaxConns, a.log)
		if err != nil {
			return nil, err
		}
		a.DB, a.Migrator = d, m
	} else if err := a.openAndMigrate(ctx, opts.Name); err != nil {
		return nil, err
	}
	if a.pace, err = pace.New(pace.Config{Pool: a.DB.Pool}); err != nil {
		a.Close()
		return nil, err
	}
	if err := a.devSecrets(ctx, opts.Operator); err != nil {
		a.Close()
		return nil, err
	}
	if a.River, err = a.riverClient(opts); err != nil {
		a.Close()
		return nil, err
	}
	if err := a.jobOutbox(ctx, opts); err != nil {
		a.Close()
		return nil, err
	}
	if err := a.webhookService(ctx, opts.Webhooks); err != nil {
		a.Close()
		return nil, err
	}
	if err := a.identity(); err != nil {
		a.Close()
		return nil, err
	}
	if err := a.senderNumbers(); err != nil {
		a.Close()
		return nil, err
	}
	if err := a.templateService(); err != nil {
		a.Close()
		return nil, err
	}
	if err := a.messaging(ctx); err != nil {
		a.Close()
		return nil, err
	}
	if err := a.campaignService(ctx); err != nil {
		a.Close()
		return nil, err
	}
	if a.apiDoc, err = apiDoc(); err != nil {
		a.Close()
		return nil, err
	}
	a.Engine = a.routes()
	if a.workers != nil {
		a.addWorkers(a.jobs)
		if a.rescuer, err = a.jobs.Rescuer(a.DB); err != nil {
			a.Close()
			return nil, err
		}
	}
	return a, nil
}

// WaitForDatabase waits up to DB_CONNECT_TIMEOUT for the database server
// to answer (creating the database if it is missing), logging each failed
// attempt, so a process started before its database neither exits at once
// nor waits without a word. New calls it; so does platform migrate, which
// opens the database without an App.
func WaitForDatabase(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	err := db.WaitForDatabase(ctx, cfg.DatabaseURL, db.WaitConfig{Timeout: cfg.DBConnectTimeout, Logger: log})
	if errors.Is(err, db.ErrNotReachable) {
		return fmt.Errorf("%w (DB_CONNECT_TIMEOUT=%s: raise it to wait longer)", err, cfg.DBConnectTimeout)
	}
	return err
}

// openAndMigrate connects to the database (waiting for its server up to
// DB_CONNECT_TIMEOUT, creating the database if missing) and migrates the
// central, network and river schemas.
func (a *App) openAndMigrate(ctx context.Context, name string) error {
	cfg := a.cfg
	if err := WaitForDatabase(ctx, cfg, a.log); err != nil {
		return err
	}
	d, err := db.Open(ctx, db.Config{
		URL: cfg.DatabaseURL, MaxConns: cfg.DBMaxConns, AcquireTimeout: cfg.DBAcquireTimeout, ApplicationName: name,
		MaxConnTenants: off(cfg.DBMaxConnTenants),
	})
	if err != nil {
		return err
	}
	a.DB = d
	if a.Migrator, err = migrate.New(migrate.Config{Pool: d.Pool, Logger: a.log}); err != nil {
		a.Close()
		return err
	}
	if n, err := a.Migrator.Base(ctx); err != nil {
		a.Close()
		return fmt.Errorf("migrate: %w", err)
	} else if n > 0 {
		a.log.Info("database migrated", "migrations_applied", n)
	}
	if advice := a.checkFiles(ctx); advice != "" {
		a.log.Warn("database setting too low for this many organizations", "advice", advice)
	}
	return nil
}

// devSecrets replaces every secret the configuration generated (unset
// outside production) by the development value kept in the database
// (package devsecrets), so that a restart and every process on the same
// database use the same value, and warns about each. An operator command
// (readOnly) reads the kept values, keeps its generated one where there is
// none, and writes and warns about nothing.
func (a *App) devSecrets(ctx context.Context, readOnly bool) error {
	for _, name := range a.cfg.Generated {
		field := a.cfg.SecretField(name)
		if field == nil {
			return fmt.Errorf("generated secret %s has no configuration field", name)
		}
		if readOnly {
			value, found, err := devsecrets.Read(ctx, a.DB.Bun, name)
			if err != nil {
				return err
			}
			if found {
				*field = value
			}
			continue
		}
		value, created, err := devsecrets.Keep(ctx, a.DB.Bun, name, *field)
		if err != nil {
			return err
		}
		*field = value
		a.log.Warn("secret not configured; using the development value kept in the database "+
			"(set it, the same on every node, for production: PLATFORM_ENV=production refuses to start without it)",
			"variable", name, "kept_in", "central.dev_secrets", "created", created)
	}
	return nil
}

// riverClient builds the process's River client: with opts.Workers, with a
// worker bundle (filled by addWorkers) and the periodic jobs.
func (a *App) riverClient(opts Options) (*river.Client[pgx.Tx], error) {
	cfg := opts.Jobs
	if cfg.Logger == nil {
		cfg.Logger = a.log
	}
	// A delivery's real duration: one network call, then the throttle
	// and the batch (docs/design.md, §Orphaned deliveries).
	defaults.Positive(&cfg.DeliveryTimeout, a.cfg.NetworkTimeout+queue.DeliveryTimeoutMargin)
	defaults.Positive(&cfg.WebhookMaxWorkers, a.cfg.WebhookWorkers)
	cfg = cfg.WithDefaults()
	a.jobs = cfg
	if opts.Workers {
		a.workers = river.NewWorkers()
		cfg.Workers = a.workers
		cfg.Periodic = []*river.PeriodicJob{
			jobs.HousekeepingPeriodic(time.Hour),
			jobs.AccountSweepPeriodic(a.cfg.SenderSweepInterval),
			jobs.KeyExpiryPeriodic(),
			jobs.WebhookOutboxPeriodic(jobs.WebhookOutboxInterval),
		}
	}
	cfg.Pool = a.DB.Pool
	return queue.NewClient(cfg)
}

// addWorkers registers every worker in the River client's bundle.
func (a *App) addWorkers(cfg queue.Config) {
	workers := a.workers
	river.AddWorker(workers, &jobs.HousekeepingWorker{
		Purgers: map[string]jobs.Purger{
			"refresh_tokens":     jobs.PurgerFunc(a.Accounts.PurgeRefreshTokens),
			"login_throttle":     jobs.PurgerFunc(a.Accounts.PurgeLoginThrottle),
			"idempotency_keys":   jobs.PurgerFunc(a.purgeIdempotencyKeys),
			"webhook_deliveries": jobs.PurgerFunc(a.purgeWebhookDeliveries),
			"web_sessions": jobs.PurgerFunc(func(ctx context.Context, now time.Time) (int64, error) {
				return web.PurgeSessions(ctx, a.DB.Bun, now, web.DefaultIdleTimeout)
			}),
		},
		Now:    a.clock.Now,
		Logger: a.log,
	})
	river.AddWorker(workers, &jobs.KeyExpiryWorker{Keys: a.Keys, Now: a.clock.Now, Logger: a.log})
	a.senderWorkers(workers)
	a.messagingWorkers(workers, cfg)
	a.campaignWorkers(workers, cfg)
	a.webhookWorkers(workers)
	a.templateWorkers(workers)
}

// apiDoc serves the binary's own OpenAPI document. It is built once per
// process (the conversion to JSON takes tens of milliseconds, ten times that
// under the race detector, and tests start many Apps) and is read-only, so
// every App shares it.
var apiDoc = sync.OnceValues(func() (*apidoc.Docs, error) { return apidoc.New(apidoc.Config{Document: docs.OpenAPIYAML()}) })

// routes builds the engine: operational endpoints, the API document and
// its reference page, then the APIs.
func (a *App) routes() *gin.Engine {
	r := httpx.NewEngine(httpx.Config{
		Logger:   a.log,
		Metrics:  a.Metrics,
		Classify: classify,
		// TRUSTED_PROXIES: the client address of login throttling and the
		// logs comes from X-Forwarded-For only behind these.
		TrustedProxies: a.cfg.TrustedProxies,
	})
	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	r.GET("/readyz", a.ready)
	r.GET("/metrics", gin.WrapH(a.Metrics.Handler()))
	a.apiDoc.Mount(r)
	a.TenantRoutes = a.tenantAPI.Mount(r)
	a.CentralRoutes = a.centralAPI.Mount(r)
	tenant.MountSenders(a.TenantRoutes, a.Senders)
	central.MountSenders(a.CentralRoutes, a.Senders)
	central.MountAudit(a.CentralRoutes, a.Audit)
	a.messagingRoutes()
	a.webhookRoutes()
	a.templateRoutes()
	a.campaignRoutes()
	a.networkEventRoutes(r)
	a.dashboardRoutes(r)
	return r
}

// classify maps infrastructure errors to their statuses (docs/api.md, §Status
// codes).
func classify(err error) *apperr.Error {
	if db.IsUnavailable(err) || errors.Is(err, context.DeadlineExceeded) {
		return apperr.Unavailable(err)
	}
	return nil
}

// ready answers 200 when the database answers and its schemas are at this
// binary's versions, else 503.
func (a *App) ready(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	current, err := a.Migrator.Current(ctx)
	switch {
	case err != nil:
		httpx.Fail(c, apperr.Unavailable(fmt.Errorf("readiness: %w", err)))
	case !current:
		httpx.Fail(c, apperr.New(apperr.KindUnavailable, "migrations_pending", "Database migrations are not current."))
	default:
		body := gin.H{"status": "ready"}
		if advice := a.checkFiles(ctx); advice != "" {
			body["warnings"] = []string{advice}
		}
		c.JSON(http.StatusOK, body)
	}
}

// checkFiles reads the database's file budget (db.FileBudget) into the
// metrics and returns what to set when it is short ("" when it is not, or
// cannot be read: the budget is advice, never a reason not to serve).
func (a *App) checkFiles(ctx context.Context) string {
	b, err := db.ReadFileBudget(ctx, a.DB.Pool)
	if err != nil {
		a.log.WarnContext(ctx, "could not read the database's file budget", "error", err)
		return ""
	}
	a.Metrics.MaxFiles.Set(float64(b.MaxFilesPerProcess))
	a.Metrics.TenantFiles.Set(float64(b.Needed()))
	return b.Advice()
}

// Handler is the HTTP handler of the whole service.
func (a *App) Handler() http.Handler { return a.Engine }

// builtinDrainInterval is how often a worker process applies the built-in
// network's reports (reads, messages written to sender numbers): a read
// becomes the message's read status, and its webhook, within about this.
const builtinDrainInterval = 250 * time.Millisecond

// Run serves HTTP on ln (when ln is not nil) and works jobs (when the App was
// built with workers) until ctx is cancelled, then shuts down within
// SHUTDOWN_TIMEOUT of it: in-flight requests finish, workers stop taking
// jobs, and running jobs may finish in the first half of the time the
// requests left, then are cancelled (queue.Stop).
func (a *App) Run(ctx context.Context, ln net.Listener) error {
	// The whole shutdown shares one deadline, set when ctx ends.
	stopBy := make(chan time.Time, 1)
	stopDeadline := context.AfterFunc(ctx, func() { stopBy <- time.Now().Add(a.cfg.ShutdownTimeout) })
	defer stopDeadline()
	rescued := make(chan struct{})
	if a.workers != nil {
		// River hard-stops (cancelling running jobs) when its Start context
		// is cancelled: it gets one ctx's end does not cancel (Stop below).
		if err := a.River.Start(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("start workers: %w", err)
		}
		go func() {
			defer close(rescued)
			a.rescuer.Run(ctx)
		}()
		a.log.Info("workers started")
	} else {
		close(rescued)
	}
	var drained sync.WaitGroup
	drainCtx, stopDrain := context.WithCancel(ctx)
	defer stopDrain()
	if a.workers != nil {
		drained.Go(func() { a.sweepAtStart(drainCtx) })
	}
	if a.workers != nil && a.cfg.Network == "builtin" {
		drained.Go(func() { a.drainBuiltinNetwork(drainCtx, builtinDrainInterval) })
	}
	defer func() { <-rescued }()
	var serveErr error
	if ln != nil {
		a.log.Info("http listening", "addr", ln.Addr().String())
		serveErr = httpx.Serve(ctx, httpx.NewServer(ln.Addr().String(), a.Engine), ln, a.cfg.ShutdownTimeout)
	} else {
		<-ctx.Done()
	}
	stopDrain()
	drained.Wait()
	if a.workers != nil {
		deadline := time.Now().Add(a.cfg.ShutdownTimeout)
		select {
		case deadline = <-stopBy:
		default: // the listener failed: ctx has not ended
		}
		if floor := time.Now().Add(time.Second); deadline.Before(floor) {
			deadline = floor // at least a second, for cancelled jobs to return
		}
		stopCtx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
		defer cancel()
		cancelled, err := queue.Stop(stopCtx, a.River)
		if err != nil {
			return errors.Join(serveErr, err)
		}
		if cancelled {
			a.log.Warn("jobs still running at half the shutdown time were cancelled; River runs them again later")
		}
		a.log.Info("workers stopped")
	}
	return serveErr
}

// Close stops the webhook outbox expansions and the job outbox's moves
// and releases the database.
func (a *App) Close() {
	if a.Webhooks != nil {
		a.Webhooks.Close()
	}
	if a.Outbox != nil {
		a.Outbox.Close()
	}
	if a.DB != nil {
		a.DB.Close()
	}
}
