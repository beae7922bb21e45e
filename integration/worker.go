package integration

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/app"
	"github.com/bizmsg/platform/platform/config"
)

// StartWorker runs one more worker in the test's process on the database
// at dbURL, as a `platform worker` process would: an app of its own, with
// its own pool (DB_MAX_CONNS 4) and River client. settings are added to
// the configuration it loads; opts gives the rest (its Config and Workers
// are set here, a nil Logger discards the logs). It stops when the test
// ends, and the test fails if its run ended with an error.
func StartWorker(t testing.TB, dbURL string, settings map[string]string, opts app.Options) *app.App {
	t.Helper()
	env := map[string]string{
		"DATABASE_URL": dbURL, "DB_MAX_CONNS": "4",
		"JWT_SECRET": strings.Repeat("j", 32), "API_KEY_PEPPER": strings.Repeat("p", 32),
	}
	for k, v := range settings {
		env[k] = v
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	opts.Config, opts.Workers = cfg, true
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := app.New(ctx, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker run: %v", err)
		}
		w.Close()
	})
	return w
}
