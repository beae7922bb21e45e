package httpx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/bizmsg/platform/platform/defaults"
)

// Server timeouts. ReadHeaderTimeout stops slow-header (slowloris) clients;
// ReadTimeout covers a full 1 MiB body on a slow link; WriteTimeout is longer
// than any handler should take.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 120 * time.Second
	maxHeaderBytes    = 64 << 10
)

// DefaultShutdownTimeout is used by Serve when shutdownTimeout is not positive.
const DefaultShutdownTimeout = 30 * time.Second

// NewServer returns an *http.Server for h on addr with production timeouts
// and a 64 KiB header limit.
func NewServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
}

// Serve serves srv on ln until ctx is cancelled, then shuts down gracefully:
// the listener closes at once and in-flight requests get up to
// shutdownTimeout (DefaultShutdownTimeout if not positive) to finish, after
// which remaining connections are closed. It returns nil after a clean
// shutdown, and an error if serving fails or the shutdown times out.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, shutdownTimeout time.Duration) error {
	defaults.Positive(&shutdownTimeout, DefaultShutdownTimeout)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case err := <-served:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("httpx: serve on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}

	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		closeErr := srv.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			closeErr = errors.Join(closeErr, err)
		}
		return fmt.Errorf("httpx: graceful shutdown: %w", errors.Join(err, closeErr))
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("httpx: serve on %s: %w", ln.Addr(), err)
	}
	return nil
}

// ServeAside serves h on a listener of its own at addr until ctx is done:
// the operator listeners (the profiler, the operator console), never
// reachable through the APIs. It returns once the listener is open; an
// error after that is logged. what names the listener in logs and errors.
func ServeAside(ctx context.Context, addr string, h http.Handler, log *slog.Logger, what string) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: listen on %s: %w", what, addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn(what+" stopped", "error", err)
		}
	}()
	log.Info(what+" listening", "addr", ln.Addr().String())
	return ln.Addr(), nil
}
