// Package senders is the sender-number service shared by the Tenant API, the
// Central API (dashboard), the River workers and the operator commands:
// registration, the OTP (issue, delivery, verification, resend), the state
// machine of docs/api.md (§Sender numbers), the daily limit override, and
// the checks the send path makes.
//
// # States
//
//	(none) ──register──▶ pending_verification
//	pending_verification ──OTP accepted, owner verified──▶ active
//	pending_verification ──OTP accepted, owner unverified──▶ pending_account_verification
//	pending_account_verification ──owner verified (periodic sweep)──▶ active
//	any but rejected ──operator suspend──▶ suspended
//	suspended ──operator unsuspend──▶ what the verification facts give
//	any but rejected ──operator reject──▶ rejected (final)
//
// Every transition happens in one transaction that locks the tenant row
// (SELECT ... FOR UPDATE), so concurrent requests change a number once.
//
// # Cross-organization rules
//
// A phone is registered at most once per organization (the tenant table's
// unique phone) and is active in at most one organization: activation claims
// the phone in central.active_sender_phones, in a transaction of its own
// before the activation's (which checks the claim under the row lock), and
// releases it when the number did not become active; the periodic sweep
// releases the claims a crash left (central.go).
// central.sender_number_directory mirrors every number's organization, phone
// and status for operator look-ups by phone and for the account-verification
// sweep. No transaction writes a tenant schema and a central table: the
// directory entry and the audit entries of a change are a row of the
// tenant's job outbox, applied on the coordinator after the commit
// (Central.Apply; docs/scaling.md, §What crosses nodes today).
package senders

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/webhooks"
)

// Status is a sender number's state.
type Status string

// The states of a sender number (docs/api.md, §Sender numbers: States).
const (
	StatusPendingVerification        Status = "pending_verification"
	StatusActive                     Status = "active"
	StatusPendingAccountVerification Status = "pending_account_verification"
	StatusSuspended                  Status = "suspended"
	StatusRejected                   Status = "rejected"
)

// Values of Sender.VerificationStatus: whether the OTP has been accepted.
const (
	VerificationPending  = "pending_verification"
	VerificationVerified = "verified"
)

// Limits of the inputs.
const (
	// MaxDisplayNameLength is the longest display_name, in characters.
	MaxDisplayNameLength = 100
	// MaxDailyLimitOverride is the largest daily_limit_override accepted.
	MaxDailyLimitOverride = 1_000_000_000
	// OTPDigits is the length of a one-time password.
	OTPDigits = 6
)

// Sender is a sender number as the service's callers see it.
type Sender struct {
	ID                 int64
	Phone              string
	DisplayName        string
	Status             Status
	VerificationStatus string
	// DailyLimitOverride is nil when the organization's default applies.
	DailyLimitOverride *int
	// VerifiedAt is when the OTP was accepted.
	VerifiedAt *time.Time
	// ActivatedAt is when the number last became active.
	ActivatedAt *time.Time
	// OTPSentAt is when the current OTP was delivered to the owner's network
	// account; nil while undelivered (or when the owner has no account).
	OTPSentAt *time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
}

// DailyLimit returns the number's daily message limit: its override, else the
// organization's default.
func (s Sender) DailyLimit(orgDefault int) int {
	if s.DailyLimitOverride != nil {
		return *s.DailyLimitOverride
	}
	return orgDefault
}

// senderJSON is the resource of docs/api.md, §Sender numbers: Resource.
type senderJSON struct {
	ID                 int64   `json:"id"`
	Phone              string  `json:"phone"`
	DisplayName        string  `json:"display_name"`
	Status             Status  `json:"status"`
	VerificationStatus string  `json:"verification_status"`
	DailyLimitOverride *int    `json:"daily_limit_override"`
	VerifiedAt         *string `json:"verified_at"`
	OTPSentAt          *string `json:"otp_sent_at"`
	CreatedAt          string  `json:"created_at"`
}

// MarshalJSON renders the API resource: timestamps RFC 3339 in UTC to the
// second, daily_limit_override and verified_at null when unset.
func (s Sender) MarshalJSON() ([]byte, error) {
	return json.Marshal(senderJSON{
		ID:                 s.ID,
		Phone:              s.Phone,
		DisplayName:        s.DisplayName,
		Status:             s.Status,
		VerificationStatus: s.VerificationStatus,
		DailyLimitOverride: s.DailyLimitOverride,
		VerifiedAt:         clock.FormatPtr(s.VerifiedAt),
		OTPSentAt:          clock.FormatPtr(s.OTPSentAt),
		CreatedAt:          clock.Format(s.CreatedAt),
	})
}

// Config configures a Service.
type Config struct {
	// DB is the database: the service's transactions and the send path's
	// read run on its pgx pool, its other statements on bun. Required.
	DB *db.DB
	// Jobs inserts the OTP delivery job in the pgx transaction that issues
	// the code, so the code and its job commit together. The platform's is
	// the job outbox (joboutbox.Outbox) with Central.Apply registered for
	// KindCentral: it then also carries the number's coordinator writes
	// (its directory entry, its audit entries), and the service flushes it
	// after each commit. Any other inserter (the process's River client, in
	// tests) makes the service write those in the tenant's transaction, as
	// a single server can. Required.
	Jobs queue.Inserter
	// Network is the messaging network. Required.
	Network network.Network
	// Secret keys the OTP hashes and seals the codes inside job arguments. It
	// must be at least 32 bytes and the same on every node (the platform passes
	// API_KEY_PEPPER); the keys actually used are derived from it.
	Secret []byte
	// Clock is the time source. Default clock.Real{}.
	Clock clock.Clock
	// Logger. Default slog.Default().
	Logger *slog.Logger
	// OTPTTL is how long a code is valid. Default 10 minutes.
	OTPTTL time.Duration
	// MaxOTPAttempts is how many wrong codes are allowed before a new code is
	// required. Default 5.
	MaxOTPAttempts int
	// ResendCooldown is the least time between two codes for one number.
	// Default 1 minute.
	ResendCooldown time.Duration
	// PlatformName names the service in OTP messages. Default "bizmsg".
	PlatformName string
	// Events records sender_number.status_changed for webhooks in the
	// transaction of each status change. Nil: no events.
	Events webhooks.Emitter
}

// Service implements the sender-number rules. It is safe for concurrent use.
type Service struct {
	db      *db.DB
	pool    *pgxpool.Pool
	q       named
	jobs    queue.Inserter
	net     network.Network
	clock   clock.Clock
	log     *slog.Logger
	cfg     Config
	hashKey []byte
	sealer  *apikey.Sealer
	// outbox is cfg.Jobs when it is a job outbox that applies KindCentral
	// (toCentral); nil otherwise.
	outbox centralOutbox
}

// New validates cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.DB == nil || cfg.DB.Pool == nil:
		return nil, errors.New("senders: Config.DB is required")
	case cfg.Jobs == nil:
		return nil, errors.New("senders: Config.Jobs is required")
	case cfg.Network == nil:
		return nil, errors.New("senders: Config.Network is required")
	case len(cfg.Secret) < 32:
		return nil, fmt.Errorf("senders: Config.Secret must be at least 32 bytes, got %d", len(cfg.Secret))
	}
	defaults.Clock(&cfg.Clock)
	defaults.Logger(&cfg.Logger)
	defaults.Positive(&cfg.OTPTTL, 10*time.Minute)
	defaults.Positive(&cfg.MaxOTPAttempts, 5)
	defaults.Positive(&cfg.ResendCooldown, time.Minute)
	if cfg.PlatformName == "" {
		cfg.PlatformName = "bizmsg"
	}
	sealer, err := apikey.NewSealer(deriveKey(cfg.Secret, "bizmsg/sender-otp/seal/v1"))
	if err != nil {
		return nil, fmt.Errorf("senders: %w", err)
	}
	q, err := loadNamed()
	if err != nil {
		return nil, err
	}
	svc := &Service{
		db:      cfg.DB,
		pool:    cfg.DB.Pool,
		q:       q,
		jobs:    cfg.Jobs,
		net:     cfg.Network,
		clock:   cfg.Clock,
		log:     cfg.Logger,
		cfg:     cfg,
		hashKey: deriveKey(cfg.Secret, "bizmsg/sender-otp/hash/v1"),
		sealer:  sealer,
	}
	if o, ok := cfg.Jobs.(centralOutbox); ok && o.Applies(KindCentral) {
		svc.outbox = o
	}
	return svc, nil
}

// deriveKey derives a purpose-bound 32-byte key from secret, so one
// configured secret never keys two different things directly.
func deriveKey(secret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// inTx runs fn in a pgx transaction on the pool (db.BeginFunc) and commits
// when fn returns nil; an error from fn (returned as it is) or a panic rolls
// it back.
func (s *Service) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return db.BeginFunc(ctx, s.pool, fn)
}

// inRowTx is inTx with number id of t loaded and locked for update first:
// fn gets the row (a number that is not there is lockRow's error, and fn
// does not run).
func (s *Service) inRowTx(ctx context.Context, t db.Tenant, id int64, fn func(tx pgx.Tx, r *row) error) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		r, err := s.q.lockRow(ctx, tx, t, id)
		if err != nil {
			return err
		}
		return fn(tx, r)
	})
}
