package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"

	"github.com/bizmsg/platform/platform/httpx"
)

// startPprof serves the Go profiler (net/http/pprof) on addr when addr is
// set (PPROF_ADDR), on a listener of its own so it is never reachable through
// the APIs. Only loopback addresses are accepted: profiles expose memory. It
// stops when ctx is cancelled.
func startPprof(ctx context.Context, addr string, log *slog.Logger) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("PPROF_ADDR: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("PPROF_ADDR must be a loopback address like 127.0.0.1:6060, got %q", addr)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	_, err = httpx.ServeAside(ctx, addr, mux, log, "pprof")
	return err
}
