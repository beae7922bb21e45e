// Package accounts is the business service of people and organizations:
// registration (an organization with its tenant schema and its owner),
// login with a throttle on failures, access and refresh tokens, logout, the
// signed-in user's context and the organization's members. The Central API
// (package central) and the dashboard (package web) both call it; it knows
// nothing of HTTP.
package accounts

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/bizmsg/platform/platform/sqlq"
	"github.com/bizmsg/platform/platform/token"
)

// Roles of a user in an organization.
const (
	RoleOwner  = "owner"
	RoleAdmin  = "admin"
	RoleMember = "member"
)

// Defaults of Config.
const (
	// DefaultDailyLimit is the per-sender daily limit given to new
	// organizations when Config.DefaultDailyLimit is zero.
	DefaultDailyLimit = 1000
	// DefaultRefreshTTL is how long a refresh token stays usable.
	DefaultRefreshTTL = 30 * 24 * time.Hour
)

// Config configures the Service.
type Config struct {
	// DB is the central database the Service owns tables of, through
	// bun (DB.Bun). Required.
	DB *db.DB
	// Migrator provisions a new organization's tenant schema. Required.
	Migrator *migrate.Migrator
	// Issuer signs and verifies access tokens. Required.
	Issuer *token.Issuer
	// Clock is the time source. Default clock.Real{}; it should be the
	// Issuer's clock too.
	Clock clock.Clock
	// DefaultDailyLimit is given to new organizations. Default
	// DefaultDailyLimit.
	DefaultDailyLimit int
	// RefreshTTL is the lifetime of a refresh token. Default DefaultRefreshTTL.
	RefreshTTL time.Duration
	// Throttle limits failed logins.
	Throttle ThrottleConfig
	// Logger receives failures that do not fail the request. Default
	// slog.Default().
	Logger *slog.Logger
}

// Service is the accounts business logic: registration, login, token
// refresh and logout, the signed-in user's context, and organization
// members. It owns the central organizations, users, memberships,
// refresh_tokens and login_throttle tables. It is safe for concurrent use.
type Service struct {
	db  *db.DB
	q   *sqlq.Queries
	cfg Config
}

// New validates cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.DB == nil || cfg.DB.Bun == nil:
		return nil, errors.New("accounts: Config.DB is required")
	case cfg.Migrator == nil:
		return nil, errors.New("accounts: Config.Migrator is required")
	case cfg.Issuer == nil:
		return nil, errors.New("accounts: Config.Issuer is required")
	}
	defaults.Clock(&cfg.Clock)
	defaults.Positive(&cfg.DefaultDailyLimit, DefaultDailyLimit)
	defaults.Positive(&cfg.RefreshTTL, DefaultRefreshTTL)
	cfg.Throttle = cfg.Throttle.withDefaults()
	defaults.Logger(&cfg.Logger)
	q, err := sqlq.Load(queries, "queries")
	if err != nil {
		return nil, fmt.Errorf("accounts: %w", err)
	}
	return &Service{db: cfg.DB, q: q, cfg: cfg}, nil
}
