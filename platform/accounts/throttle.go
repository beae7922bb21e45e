package accounts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/sqlq"
)

// ThrottleConfig limits login attempts per account and per client address.
// Each counter allows a number of attempts per fixed window; a successful
// login gives its attempt back (and clears the account's counter).
type ThrottleConfig struct {
	// Window is the length of a counting window. Default 15 minutes.
	Window time.Duration
	// AccountLimit is the number of failed attempts allowed per account (the
	// normalised email, whether or not an account has it) per window.
	// Default 5.
	AccountLimit int
	// AddressLimit is the number of failed attempts allowed per client
	// address per window. Default 20.
	AddressLimit int
}

func (c ThrottleConfig) withDefaults() ThrottleConfig {
	defaults.Positive(&c.Window, 15*time.Minute)
	defaults.Positive(&c.AccountLimit, 5)
	defaults.Positive(&c.AddressLimit, 20)
	return c
}

// throttleKeys names the two counters of a login: the account as a hash of
// the normalised email (no email is stored in the table) and the address.
// "account:" sorts before "address:", so every login locks its rows in the
// same order.
func throttleKeys(email, addr string) (account, address string) {
	sum := sha256.Sum256([]byte(email))
	return "account:" + hex.EncodeToString(sum[:]), "address:" + addr
}

// reserveLogin counts one attempt on the account's and the address's
// counters in a single atomic upsert, before the password is checked, so
// that the limits hold exactly however many requests race on however many
// processes. Over either limit it returns 429 with the time left in the
// window.
func (s *Service) reserveLogin(ctx context.Context, account, address string, now time.Time) error {
	tc := s.cfg.Throttle
	var counters []throttleRow
	if err := s.q.Raw(s.db.Bun, "reserve_login", sqlq.Args{
		"account": account, "address": address, "now": now, "expired": now.Add(-tc.Window),
	}).Scan(ctx, &counters); err != nil {
		return fmt.Errorf("login throttle: %w", err)
	}
	var retry time.Duration
	for _, c := range counters {
		limit := tc.AddressLimit
		if c.Key == account {
			limit = tc.AccountLimit
		}
		if c.Attempts > limit {
			retry = max(retry, c.WindowStart.Add(tc.Window).Sub(now), time.Second)
		}
	}
	if retry > 0 {
		return apperr.RateLimited("too_many_login_attempts",
			"Too many failed login attempts. Try again later.", retry)
	}
	return nil
}

// releaseLogin gives a successful login's attempt back: the account's
// counter is cleared, the address's decremented.
func (s *Service) releaseLogin(ctx context.Context, account, address string) error {
	_, err := s.q.Raw(s.db.Bun, "release_login", sqlq.Args{"account": account, "address": address}).Exec(ctx)
	if err != nil {
		return fmt.Errorf("login throttle release: %w", err)
	}
	return nil
}
