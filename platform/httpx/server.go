package httpx

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
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
	if shutdownTimeout <= 0 {
		shutdownTimeout = DefaultShutdownTimeout
	}
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
