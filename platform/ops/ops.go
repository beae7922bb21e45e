// Package ops is the operator console: River's web UI (riverui) over the
// process's River client, on a listener of its own (OPS_ADDR, loopback by
// default) and behind operator credentials (OPS_USER, OPS_PASSWORD, HTTP
// Basic). An operator sees the queues and every job (platform admin
// message show names a message's delivery job), its attempts and errors,
// and can retry or cancel it. Without credentials the console is not
// served at all.
package ops

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"riverqueue.com/riverui"

	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/httpx"
)

// Prefix is the path the console is served under.
const Prefix = "/ops"

// Config configures the console.
type Config struct {
	// Addr is the listen address. Required.
	Addr string
	// User and Password are the operator credentials. Both are required.
	User     string
	Password string
	// Logger. Default slog.Default().
	Logger *slog.Logger
}

// Handler returns the console's handler, with every request (the UI's
// assets included) behind the credentials. It runs riverui's background
// services until ctx is done.
func Handler(ctx context.Context, client *river.Client[pgx.Tx], cfg Config) (http.Handler, error) {
	if cfg.User == "" || cfg.Password == "" {
		return nil, errors.New("ops: operator credentials are required")
	}
	defaults.Logger(&cfg.Logger)
	ui, err := riverui.NewHandler(&riverui.HandlerOpts{
		Endpoints: riverui.NewEndpoints(client, nil),
		Logger:    cfg.Logger.With("component", "ops"),
		Prefix:    Prefix,
	})
	if err != nil {
		return nil, fmt.Errorf("ops: console: %w", err)
	}
	if err := ui.Start(ctx); err != nil {
		return nil, fmt.Errorf("ops: start console: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(Prefix+"/", ui)
	mux.Handle("/", http.RedirectHandler(Prefix+"/", http.StatusFound))
	return basicAuth(mux, cfg.User, cfg.Password), nil
}

// basicAuth lets through requests with the operator's credentials and
// answers 401 to every other. Both values are compared in constant time,
// as hashes so that their lengths do not show either.
func basicAuth(next http.Handler, user, password string) http.Handler {
	wantUser, wantPass := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(password))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		gotUser, gotPass := sha256.Sum256([]byte(u)), sha256.Sum256([]byte(p))
		userOK := subtle.ConstantTimeCompare(gotUser[:], wantUser[:])
		passOK := subtle.ConstantTimeCompare(gotPass[:], wantPass[:])
		if !ok || userOK&passOK != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="bizmsg operator console", charset="UTF-8"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"code":"unauthorized","message":"Operator credentials are required."}}` + "\n"))
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// Serve serves the console on cfg.Addr until ctx is done. It returns once
// the listener is open; errors after that are logged.
func Serve(ctx context.Context, client *river.Client[pgx.Tx], cfg Config) (net.Addr, error) {
	defaults.Logger(&cfg.Logger)
	h, err := Handler(ctx, client, cfg)
	if err != nil {
		return nil, err
	}
	return httpx.ServeAside(ctx, cfg.Addr, h, cfg.Logger, "operator console")
}
