// Command platform is the business messaging platform: one binary whose
// subcommands run the service, its workers, migrations and operator tasks.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/bizmsg/platform/cmd/platform/bench"
	"github.com/bizmsg/platform/cmd/platform/internal/term"
	"github.com/bizmsg/platform/platform/app"
	"github.com/bizmsg/platform/platform/config"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/bizmsg/platform/platform/ops"
)

const usage = `Usage: platform <command> [flags]

Commands:
  serve     run the HTTP APIs and the background workers (default for development)
  api       run only the HTTP APIs
  worker    run only the background workers
  migrate   create the database if needed and migrate every schema (central,
            network, river, and each organization's tenant schema)
  network   built-in messaging network accounts, blocks and inboxes (platform network -h)
  admin     operator commands: suspend, unsuspend, reject sender numbers, set limits (platform admin -h)
  bench     measure the platform on this machine (platform bench -h)
  healthcheck  exit 0 when the service at --url (default
            http://127.0.0.1:8080/readyz) is ready (container health checks)

Configuration is read from the environment; see README.md.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop() // before os.Exit, which skips deferred calls
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "platform:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	service := func(name string, api, worker bool) command {
		return func(ctx context.Context, args []string, _, stderr io.Writer) error {
			return runService(ctx, args, stderr, name, api, worker)
		}
	}
	return dispatch(ctx, args, stdout, stderr, usage, "command", map[string]command{
		"serve":       service("serve", true, true),
		"api":         service("api", true, false),
		"worker":      service("worker", false, true),
		"migrate":     runMigrate,
		"bench":       bench.Main,
		"network":     runNetwork,
		"admin":       runAdmin,
		"healthcheck": runHealthcheck,
	})
}

// command runs a command with the words after its name.
type command func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// dispatch runs the command of commands that args[0] names, with the words
// after it. Without a word it prints usage on stderr and returns
// flag.ErrHelp; help, -h and --help print usage on stdout; any other word
// prints usage on stderr and is an error: unknown what "word".
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer, usage, what string, commands map[string]command) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return flag.ErrHelp
	}
	name, rest := args[0], args[1:]
	if run, ok := commands[name]; ok {
		return run(ctx, rest, stdout, stderr)
	}
	switch name {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown %s %q", what, name)
}

// setup loads the configuration and builds the JSON logger.
func setup(stderr io.Writer) (config.Config, *slog.Logger, error) {
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return config.Config{}, nil, err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return config.Config{}, nil, fmt.Errorf("LOG_LEVEL: %w", err)
	}
	// Secrets left unset are kept in the database by app.New, which warns
	// about each; migrate uses none.
	return cfg, slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})), nil
}

func runService(ctx context.Context, args []string, stderr io.Writer, name string, api, workers bool) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, log, err := setup(stderr)
	if err != nil {
		return err
	}
	a, err := app.New(ctx, app.Options{Config: cfg, Logger: log, Workers: workers, Name: "bizmsg " + name})
	if err != nil {
		return err
	}
	defer a.Close()
	if err := startPprof(ctx, os.Getenv("PPROF_ADDR"), log); err != nil {
		return err
	}
	if cfg.OpsUser == "" {
		log.Info("operator console off: set OPS_USER and OPS_PASSWORD to serve it on OPS_ADDR")
	} else if _, err := ops.Serve(ctx, a.River, ops.Config{
		Addr: cfg.OpsAddr, User: cfg.OpsUser, Password: cfg.OpsPassword, Logger: log,
	}); err != nil {
		return err
	}
	var ln net.Listener
	if api {
		if ln, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
			return fmt.Errorf("listen on %s: %w", cfg.HTTPAddr, err)
		}
	}
	log.Info("platform started", "database", db.Redact(cfg.DatabaseURL), "api", api, "workers", workers)
	err = a.Run(ctx, ln)
	log.Info("platform stopped")
	return err
}

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	concurrency := fs.Int("concurrency", 4, "tenant schemas migrated at once")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, log, err := setup(stderr)
	if err != nil {
		return err
	}
	if err := app.WaitForDatabase(ctx, cfg, log); err != nil {
		return err
	}
	d, err := db.Open(ctx, db.Config{URL: cfg.DatabaseURL, MaxConns: int32(*concurrency) + 2})
	if err != nil {
		return err
	}
	defer d.Close()
	m, err := migrate.New(migrate.Config{Pool: d.Pool, Concurrency: *concurrency, Logger: log})
	if err != nil {
		return err
	}
	n, err := m.Base(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "base schemas (central, network, river): %d migrations applied\n", n)
	var progress migrate.Progress
	if term.IsTerminal(stdout) {
		progress = migrate.ProgressBar(stdout)
	}
	sum, err := m.AllTenants(ctx, progress)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, sum.String())
	return sum.Err()
}
