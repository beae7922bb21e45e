// Package keys is the API-key service shared by both APIs: the Tenant API's
// /api-keys endpoints and the dashboard's key management on the Central API
// call the same Service, so the rules live in one place.
//
// It issues keys (platform/apikey format, stored as a peppered HMAC and,
// when an encryption key is configured, an AES-GCM copy for "Show key"),
// lists and revokes them, reveals sealed copies with an audit record, and
// authenticates a presented key: one statement that finds the key by its
// prefix with its organization and member and, for a genuine live key,
// decides its request rate and writes a stale last_used_at; a constant-time
// hash comparison, and expiry and revocation checks against the platform
// clock. Nothing is cached, so a revocation takes effect on every node at
// once; concurrent authentications share the statement (a run that starts
// after they arrived).
//
// The package owns the central.api_keys table and reads the organization and
// user rows a key resolves to; with Config.Pace it decides the keys'
// request rates in central.pace (pace.AllowStep, which its statement
// includes) in the same statement.
package keys

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/batch"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/pace"
	"github.com/bizmsg/platform/platform/ratelimit"
	"github.com/bizmsg/platform/platform/sqlq"
	"github.com/bizmsg/platform/platform/webhooks"
)

// Key statuses as the API shows them. A key is revoked once revoked_at is set
// (and stays revoked), else expired once the clock reaches expires_at, else
// active.
const (
	StatusActive  = "active"
	StatusRevoked = "revoked"
	StatusExpired = "expired"
)

// Limits on key creation.
const (
	// DefaultExpiresInDays is the lifetime of a key created without
	// expires_in_days.
	DefaultExpiresInDays = 90
	// MinExpiresInDays and MaxExpiresInDays bound expires_in_days.
	MinExpiresInDays = 1
	MaxExpiresInDays = 365
	// MaxNameLength is the longest key name, in characters.
	MaxNameLength = 100
)

// DefaultTouchInterval is how stale last_used_at must be before a request
// writes it again.
const DefaultTouchInterval = time.Minute

// Config configures a Service.
type Config struct {
	// DB is the central database the keys are stored in: Authenticate's
	// statement runs on its pool (pgx, prepared), the others through bun.
	// Required.
	DB *db.DB
	// Hasher makes and checks the stored keyed hashes. Required.
	Hasher *apikey.Hasher
	// Sealer, when set, keeps an encrypted copy of every new key so that
	// Reveal can show it again. Optional.
	Sealer *apikey.Sealer
	// Clock is the time source for expiry and last_used_at. Default clock.Real{}.
	Clock clock.Clock
	// TouchInterval: last_used_at is written at most once per interval per key,
	// so authentication does not write on every request. Default
	// DefaultTouchInterval.
	TouchInterval time.Duration
	// Logger receives failures that do not fail the request (a last_used_at
	// write). Default slog.Default().
	Logger *slog.Logger
	// Batch bounds the shared statements of Authenticate: how many
	// authentications one statement takes, and how many such statements
	// run at once. Defaults 64 and batch.ReadMaxInFlight.
	Batch batch.Config
	// Pace, when set, keeps each key's request rate (the bucket
	// "key:<id>" of the store's central.pace, shared by every process):
	// Authenticate decides it in the statement that finds the key
	// (Auth.Rate), and has the store sweep. Nil: no rate is decided.
	Pace *pace.Store
	// RequestRate is the request rate of a key whose organization sets
	// none (RequestLimit), with Pace. A limit that is not valid allows
	// every request.
	RequestRate ratelimit.Limit
	// Events records api_key.expiring for webhooks (NotifyExpiring). Nil:
	// no events.
	Events webhooks.Emitter
}

// Service issues, lists, revokes, reveals and authenticates API keys. It is
// safe for concurrent use.
type Service struct {
	db  *db.DB
	q   *sqlq.Queries
	cfg Config
	// finder runs the statement of concurrent authentications together.
	finder *batch.Batcher[struct{}, lookup, *storedKey]
	// lastUsedWrites counts last_used_at rows actually written, for metrics
	// and for tests that prove the write rate.
	lastUsedWrites atomic.Int64
}

// New validates cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.DB == nil || cfg.DB.Pool == nil || cfg.DB.Bun == nil:
		return nil, errors.New("keys: Config.DB is required")
	case cfg.Hasher == nil:
		return nil, errors.New("keys: Config.Hasher is required")
	}
	defaults.Clock(&cfg.Clock)
	defaults.Positive(&cfg.TouchInterval, DefaultTouchInterval)
	defaults.Logger(&cfg.Logger)
	if cfg.Batch.MaxInFlight == 0 {
		cfg.Batch.MaxInFlight = batch.ReadMaxInFlight
	}
	allow, err := pace.AllowStep()
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	q, err := sqlq.Load(queries, "queries", allow)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	s := &Service{db: cfg.DB, q: q, cfg: cfg}
	s.finder = batch.New(s.findKeys, cfg.Batch)
	return s, nil
}

// CanReveal reports whether encrypted storage is configured, which Reveal
// needs.
func (s *Service) CanReveal() bool { return s.cfg.Sealer != nil }

// DecidesRates reports whether Authenticate decides request rates
// (Config.Pace).
func (s *Service) DecidesRates() bool { return s.cfg.Pace != nil }

// LastUsedWrites returns how many times this Service has written a key's
// last_used_at since it was built.
func (s *Service) LastUsedWrites() int64 { return s.lastUsedWrites.Load() }

// Now returns the Service's current time.
func (s *Service) Now() time.Time { return s.cfg.Clock.Now() }

// Key is a stored API key, without its secret.
type Key struct {
	ID    int64
	OrgID int64
	// CreatedBy is the user the key acts for (the dashboard user who created
	// it, or the creator of the key that created it); 0 when unknown.
	CreatedBy  int64
	Name       string
	Prefix     string
	Scopes     []string
	ExpiresAt  time.Time
	RevokedAt  *time.Time
	LastUsedAt *time.Time
	CreatedAt  time.Time
	// Sealed reports whether an encrypted copy exists (Reveal can show it).
	Sealed bool
}

// Status returns the key's status at now.
func (k Key) Status(now time.Time) string {
	switch {
	case k.RevokedAt != nil:
		return StatusRevoked
	case !now.Before(k.ExpiresAt):
		return StatusExpired
	default:
		return StatusActive
	}
}

// Resource is the API key as both APIs render it (docs/api.md, §API keys).
// PlainTextKey is set only in the creation response and by Reveal.
type Resource struct {
	ID           int64      `json:"id"`
	Name         string     `json:"name"`
	Prefix       string     `json:"prefix"`
	Scopes       []string   `json:"scopes"`
	Status       string     `json:"status"`
	ExpiresAt    time.Time  `json:"expires_at"`
	LastUsedAt   *time.Time `json:"last_used_at"`
	CreatedAt    time.Time  `json:"created_at"`
	PlainTextKey string     `json:"plain_text_key,omitempty"`
}

// Resource renders k at now, without the plain key.
func (k Key) Resource(now time.Time) Resource {
	scopes := k.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	return Resource{
		ID:         k.ID,
		Name:       k.Name,
		Prefix:     k.Prefix,
		Scopes:     scopes,
		Status:     k.Status(now),
		ExpiresAt:  clock.Stamp(k.ExpiresAt),
		LastUsedAt: clock.StampPtr(k.LastUsedAt),
		CreatedAt:  clock.Stamp(k.CreatedAt),
	}
}
