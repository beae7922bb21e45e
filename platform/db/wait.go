package db

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bizmsg/platform/platform/defaults"
)

// ErrNotReachable is the error WaitForDatabase wraps when its time is up.
var ErrNotReachable = errors.New("not reachable")

// WaitConfig bounds WaitForDatabase.
type WaitConfig struct {
	// Timeout bounds the whole wait: no attempt starts after it (one that
	// started before may take its connect timeout, at most 5 s, to fail).
	// Default 60s.
	Timeout time.Duration
	// FirstDelay is the pause after the first failed attempt; each later
	// pause doubles, up to MaxDelay. Defaults 250ms and 5s.
	FirstDelay time.Duration
	MaxDelay   time.Duration
	// Logger receives one warning per failed attempt, saying what was tried
	// and when the next attempt comes. Default slog.Default().
	Logger *slog.Logger
}

func (c *WaitConfig) setDefaults() {
	defaults.Positive(&c.Timeout, 60*time.Second)
	defaults.Positive(&c.FirstDelay, 250*time.Millisecond)
	defaults.Positive(&c.MaxDelay, 5*time.Second)
	defaults.Logger(&c.Logger)
}

// WaitForDatabase makes sure the database named by rawURL exists and
// answers (EnsureDatabase), trying again with exponential backoff while the
// server cannot be reached (nothing listens yet, the host does not resolve
// yet, the server is starting up or has no free connection), so a service
// started before its database waits for it instead of exiting into a
// restart loop. It gives up after cfg.Timeout with an error (wrapping
// ErrNotReachable and the last failure) naming the server and the attempts. A malformed URL and a refusal
// that waiting cannot cure (a wrong password, an unknown role, no right to
// create the database) fail at once.
func WaitForDatabase(ctx context.Context, rawURL string, cfg WaitConfig) error {
	cfg.setDefaults()
	pcfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return fmt.Errorf("parse database url: %w", err)
	}
	server := fmt.Sprintf("%s:%d", pcfg.Host, pcfg.Port)
	start := time.Now()
	delay := cfg.FirstDelay
	for attempt := 1; ; attempt++ {
		err := EnsureDatabase(ctx, rawURL)
		if err == nil {
			if attempt > 1 {
				cfg.Logger.Info("database reachable", "server", server, "attempts", attempt,
					"waited", time.Since(start).Round(time.Millisecond).String())
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("wait for the database at %s: %w", server, ctx.Err())
		}
		if !transient(err) {
			return err
		}
		elapsed := time.Since(start)
		if elapsed+delay > cfg.Timeout {
			return fmt.Errorf("database server %s (%s) %w: tried %d times in %s, giving up after %s: %w",
				server, Redact(rawURL), ErrNotReachable, attempt, elapsed.Round(time.Millisecond), cfg.Timeout, err)
		}
		cfg.Logger.Warn("database not reachable yet; retrying",
			"server", server, "database", Redact(rawURL), "attempt", attempt, "retry_in", delay.String(),
			"gives_up_in", (cfg.Timeout - elapsed).Round(100*time.Millisecond).String(), "error", err.Error())
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("wait for the database at %s: %w", server, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, cfg.MaxDelay)
	}
}

// transient reports whether a failed connection may succeed later: the
// server did not answer at all (refused, unreachable, unresolved, timed
// out, cut off), or answered that it cannot take the connection now
// (starting up or shutting down, class 08, too many connections). Any other
// answer of the server (authentication, authorization, a missing role) is
// the configuration's fault, and waiting does not change it.
func transient(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P03" || pgErr.Code == "57P01" ||
			pgErr.Code == "53300"
	}
	var parseErr *pgconn.ParseConfigError
	return !errors.As(err, &parseErr)
}
