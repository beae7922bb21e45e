// Package config reads the process configuration from the environment into one
// struct with safe defaults (README.md, §Configuration).
package config

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// DefaultDatabaseURL is the local Postgres the service uses when DATABASE_URL
// is unset; the database is created on first start.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/bizmsg?sslmode=disable"

// MinOpsPassword is the shortest operator console password accepted.
const MinOpsPassword = 12

// Config is the whole process configuration.
type Config struct {
	// DatabaseURL (DATABASE_URL) names the Postgres database.
	DatabaseURL string
	// DBMaxConns (DB_MAX_CONNS) caps the connection pool. Default 10.
	DBMaxConns int32
	// DBAcquireTimeout (DB_ACQUIRE_TIMEOUT) bounds the wait for a free pool
	// connection; past it a request answers 503 (db.Config.AcquireTimeout).
	// Default 5s.
	DBAcquireTimeout time.Duration
	// DBConnectTimeout (DB_CONNECT_TIMEOUT) bounds the wait for the database
	// at start-up: an unreachable server is tried again with backoff until
	// it answers or this much time has passed (db.WaitForDatabase). Default
	// 60s.
	DBConnectTimeout time.Duration
	// DBPreparedStatements (DB_PREPARED_STATEMENTS) is the most tenant
	// statements kept prepared on one pool connection (db.Prepared); each
	// costs Postgres about 100 KB on that connection. Default 64; 0 prepares
	// none.
	DBPreparedStatements int
	// DBMaxConnTenants (DB_MAX_CONN_TENANTS) is the most tenant schemas one
	// pool connection serves before it is closed and opened afresh, which
	// bounds its Postgres backend's memory (db.Config.MaxConnTenants).
	// Default 1,000; 0 sets no bound.
	DBMaxConnTenants int
	// Env (PLATFORM_ENV) is "development" (default) or "production". In
	// production every secret of RequiredSecrets() must be set: none is
	// generated.
	Env string
	// HTTPAddr (HTTP_ADDR) is the listen address. Default ":8080".
	HTTPAddr string
	// TrustedProxies (TRUSTED_PROXIES, comma-separated CIDR ranges) are the
	// reverse proxies whose X-Forwarded-For names the client (the address
	// login throttling and the logs use). Default none: the client is the
	// connection's peer and forwarding headers are ignored.
	TrustedProxies []netip.Prefix
	// JWTSecret (JWT_SECRET, ≥ 32 bytes) signs Central API access tokens.
	JWTSecret []byte
	// JWTPreviousSecret (JWT_PREVIOUS_SECRET, optional, ≥ 32 bytes) still
	// verifies tokens signed before a JWT_SECRET rotation; drop it after one
	// access-token lifetime (15 minutes).
	JWTPreviousSecret []byte
	// APIKeyPepper (API_KEY_PEPPER, ≥ 32 bytes) keys the API-key hashes.
	APIKeyPepper []byte
	// APIKeyEncryptionKey (API_KEY_ENCRYPTION_KEY, 32 bytes as 64 hex chars or
	// base64) enables encrypted key storage and the dashboard's "Show key".
	// Optional; nil disables it.
	APIKeyEncryptionKey []byte
	// Network (NETWORK) selects the messaging network: "builtin" (default) or "http".
	Network string
	// NetworkURL (NETWORK_URL) and NetworkSecret (NETWORK_SECRET) configure the
	// HTTP network adapter.
	NetworkURL    string
	NetworkSecret string
	// NetworkTimeout (NETWORK_TIMEOUT) bounds one HTTP call to the network
	// (NETWORK=http); transient failures are retried. Default 5s.
	NetworkTimeout time.Duration
	// NetworkServiceWindow (NETWORK_SERVICE_WINDOW, a duration such as 24h;
	// 0, the default, is none) is the network's service window: a message
	// that is not a template needs the recipient to have written to the
	// sender within it (docs/api.md, §Service window).
	NetworkServiceWindow time.Duration
	// DefaultDailyLimit (DEFAULT_DAILY_LIMIT) is the daily per-sender limit given
	// to new organizations. Default 1000.
	DefaultDailyLimit int
	// SenderRate (SENDER_RATE, messages/s) and SenderBurst (SENDER_BURST) are the
	// default per-sender delivery token bucket. Defaults 20 and 40.
	SenderRate  float64
	SenderBurst int
	// APIRateLimit (API_RATE_LIMIT, requests/s per key) and APIRateBurst
	// (API_RATE_BURST). Defaults 50 and 100.
	APIRateLimit float64
	APIRateBurst int
	// BatchSize (BATCH_SIZE) is the most sends, and the most deliveries, of
	// one tenant that share one statement when they arrive together
	// (acceptance.Config.Batch and delivery.Config.Batch), and the most key
	// authentications and network lookups that share one read
	// (keys.Config.Batch, builtin.Config.Batch), and of lone deliveries
	// that share the built-in network's statements
	// (builtin.Config.DeliverBatch). Default 64; 1 turns
	// batching off: every call runs its one-row statements, as many at once
	// as the pool allows.
	BatchSize int
	// SenderSweepInterval (SENDER_SWEEP_INTERVAL) is how often the job that
	// activates pending_account_verification sender numbers whose owner has
	// been verified runs. Default 30s.
	SenderSweepInterval time.Duration
	// ShutdownTimeout (SHUTDOWN_TIMEOUT) bounds graceful shutdown, from the
	// signal to the end (app.App.Run). Default 30s.
	ShutdownTimeout time.Duration
	// LogLevel (LOG_LEVEL): debug, info, warn, error. Default info.
	LogLevel string
	// OpsAddr (OPS_ADDR) is the operator console's listen address, a
	// listener of its own. Default "127.0.0.1:8090" (loopback).
	OpsAddr string
	// OpsUser (OPS_USER) and OpsPassword (OPS_PASSWORD, at least 12
	// characters) are the operator console's credentials (HTTP Basic). The
	// console is served only when both are set.
	OpsUser     string
	OpsPassword string
	// WebhookAllowPrivate (WEBHOOK_ALLOW_PRIVATE, true or false) lets
	// webhook endpoints live on loopback, private, link-local and other
	// reserved addresses (webhooks.Config.AllowPrivate): development and
	// tests only; the service logs a warning at start when it is set.
	// Default false.
	WebhookAllowPrivate bool
	// WebhookWorkers (WEBHOOK_WORKERS) is how many webhook attempts a
	// worker process runs at once (queue.Config.WebhookMaxWorkers): a slow
	// endpoint holds at most 8 of them, so it bounds how many slow
	// endpoints the other organizations' webhooks get past, and each one
	// beyond what the endpoints take costs a fetch and a snooze a second.
	// Default 100.
	WebhookWorkers int
	// WebhookBusyRate (WEBHOOK_BUSY_RATE) is how many webhook attempts
	// and outbox expansions a second a process starts while its API and
	// send path are busy: their statements in flight over 90% of the time,
	// until they are idle 25% of it again (yield.Config.BusyRate):
	// webhooks give way to the sends and catch up after. Default 2.
	WebhookBusyRate float64

	// Generated lists the secrets that were unset and generated for this
	// process (never in production). The service replaces each by the
	// development value kept in its database (SecretField) and logs a
	// warning naming it.
	Generated []string
}

// Load reads the configuration through getenv (os.Getenv in production).
func Load(getenv func(string) string) (Config, error) {
	c := Config{
		DatabaseURL:          str(getenv, "DATABASE_URL", DefaultDatabaseURL),
		Env:                  strings.ToLower(str(getenv, "PLATFORM_ENV", EnvDevelopment)),
		HTTPAddr:             str(getenv, "HTTP_ADDR", ":8080"),
		Network:              str(getenv, "NETWORK", "builtin"),
		NetworkURL:           getenv("NETWORK_URL"),
		NetworkSecret:        getenv("NETWORK_SECRET"),
		LogLevel:             strings.ToLower(str(getenv, "LOG_LEVEL", "info")),
		OpsAddr:              str(getenv, "OPS_ADDR", "127.0.0.1:8090"),
		OpsUser:              getenv("OPS_USER"),
		OpsPassword:          getenv("OPS_PASSWORD"),
		DefaultDailyLimit:    1000,
		SenderRate:           20,
		SenderBurst:          40,
		APIRateLimit:         50,
		APIRateBurst:         100,
		DBMaxConns:           10,
		DBPreparedStatements: 64,
		DBMaxConnTenants:     1000,
		DBAcquireTimeout:     5 * time.Second,
		DBConnectTimeout:     60 * time.Second,
		BatchSize:            64,
		WebhookWorkers:       100,
		WebhookBusyRate:      2,
		ShutdownTimeout:      30 * time.Second,
		SenderSweepInterval:  30 * time.Second,
		NetworkTimeout:       5 * time.Second,
	}
	var errs []string
	fail := func(name string, err error) { errs = append(errs, fmt.Sprintf("%s: %v", name, err)) }

	if v := getenv("DB_MAX_CONNS"); v != "" {
		n, err := positiveInt32(v)
		if err != nil {
			fail("DB_MAX_CONNS", err)
		}
		c.DBMaxConns = n
	}
	if v := getenv("DB_PREPARED_STATEMENTS"); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			fail("DB_PREPARED_STATEMENTS", fmt.Errorf("must be a non-negative integer, got %q", v))
		}
		c.DBPreparedStatements = n
	}
	if v := getenv("DB_MAX_CONN_TENANTS"); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			fail("DB_MAX_CONN_TENANTS", fmt.Errorf("must be a non-negative integer, got %q", v))
		}
		c.DBMaxConnTenants = n
	}
	for _, iv := range []struct {
		name string
		dst  *int
	}{{"DEFAULT_DAILY_LIMIT", &c.DefaultDailyLimit}, {"SENDER_BURST", &c.SenderBurst}, {"API_RATE_BURST", &c.APIRateBurst},
		{"BATCH_SIZE", &c.BatchSize}, {"WEBHOOK_WORKERS", &c.WebhookWorkers}} {
		if v := getenv(iv.name); v != "" {
			n, err := positiveInt(v)
			if err != nil {
				fail(iv.name, err)
			}
			*iv.dst = n
		}
	}
	for _, fv := range []struct {
		name string
		dst  *float64
	}{{"SENDER_RATE", &c.SenderRate}, {"API_RATE_LIMIT", &c.APIRateLimit}, {"WEBHOOK_BUSY_RATE", &c.WebhookBusyRate}} {
		if v := getenv(fv.name); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f <= 0 {
				fail(fv.name, fmt.Errorf("must be a positive number, got %q", v))
			}
			*fv.dst = f
		}
	}
	for _, dv := range []struct {
		name    string
		dst     *time.Duration
		example string
	}{{"SHUTDOWN_TIMEOUT", &c.ShutdownTimeout, "30s"}, {"DB_ACQUIRE_TIMEOUT", &c.DBAcquireTimeout, "5s"},
		{"DB_CONNECT_TIMEOUT", &c.DBConnectTimeout, "60s"}, {"SENDER_SWEEP_INTERVAL", &c.SenderSweepInterval, "30s"},
		{"NETWORK_TIMEOUT", &c.NetworkTimeout, "5s"}} {
		if v := getenv(dv.name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				fail(dv.name, fmt.Errorf("must be a positive duration like %s, got %q", dv.example, v))
			}
			*dv.dst = d
		}
	}
	if v := getenv("NETWORK_SERVICE_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			fail("NETWORK_SERVICE_WINDOW", fmt.Errorf("must be 0 or a positive duration like 24h, got %q", v))
		}
		c.NetworkServiceWindow = d
	}
	if v := strings.TrimSpace(getenv("WEBHOOK_ALLOW_PRIVATE")); v != "" {
		switch strings.ToLower(v) {
		case "true":
			c.WebhookAllowPrivate = true
		case "false":
		default:
			fail("WEBHOOK_ALLOW_PRIVATE", fmt.Errorf("must be true or false, got %q", v))
		}
	}
	if v := getenv("TRUSTED_PROXIES"); v != "" {
		p, err := ParseTrustedProxies(v)
		if err != nil {
			fail("TRUSTED_PROXIES", err)
		}
		c.TrustedProxies = p
	}
	switch c.Network {
	case "builtin":
	case "http":
		if c.NetworkURL == "" || c.NetworkSecret == "" {
			fail("NETWORK", fmt.Errorf("NETWORK=http needs NETWORK_URL and NETWORK_SECRET"))
		}
	default:
		fail("NETWORK", fmt.Errorf("must be builtin or http, got %q", c.Network))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		fail("LOG_LEVEL", fmt.Errorf("must be debug, info, warn or error, got %q", c.LogLevel))
	}

	switch c.Env {
	case EnvDevelopment, EnvProduction:
	default:
		fail("PLATFORM_ENV", fmt.Errorf("must be %s or %s, got %q", EnvDevelopment, EnvProduction, c.Env))
	}
	production := c.Env == EnvProduction

	var err error
	if c.JWTSecret, err = secret(getenv, "JWT_SECRET", production, &c.Generated); err != nil {
		fail("JWT_SECRET", err)
	}
	if v := getenv("JWT_PREVIOUS_SECRET"); v != "" {
		if len(v) < 32 {
			fail("JWT_PREVIOUS_SECRET", fmt.Errorf("must be at least 32 bytes"))
		}
		c.JWTPreviousSecret = []byte(v)
	}
	if c.APIKeyPepper, err = secret(getenv, "API_KEY_PEPPER", production, &c.Generated); err != nil {
		fail("API_KEY_PEPPER", err)
	}
	if v := getenv("API_KEY_ENCRYPTION_KEY"); v != "" {
		if c.APIKeyEncryptionKey, err = key32(v); err != nil {
			fail("API_KEY_ENCRYPTION_KEY", err)
		}
	}
	switch {
	case (c.OpsUser == "") != (c.OpsPassword == ""):
		fail("OPS_USER/OPS_PASSWORD", fmt.Errorf("set both or neither"))
	case c.OpsPassword != "" && len(c.OpsPassword) < MinOpsPassword:
		fail("OPS_PASSWORD", fmt.Errorf("must be at least %d characters", MinOpsPassword))
	}
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("invalid configuration: %s", strings.Join(errs, "; "))
	}
	return c, nil
}

func str(getenv func(string) string, name, def string) string {
	if v := strings.TrimSpace(getenv(name)); v != "" {
		return v
	}
	return def
}

func positiveInt(v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("must be a positive integer, got %q", v)
	}
	return n, nil
}

// positiveInt32 is positiveInt for a setting held in an int32.
func positiveInt32(v string) (int32, error) {
	n, err := positiveInt(v)
	if err != nil {
		return 0, err
	}
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("must be at most %d, got %q", math.MaxInt32, v)
	}
	return int32(n), nil
}

// secret reads a ≥ 32-byte secret, or generates one (recording its name in
// generated) when unset; in production an unset secret is an error.
func secret(getenv func(string) string, name string, production bool, generated *[]string) ([]byte, error) {
	v := getenv(name)
	if v == "" && production {
		return nil, fmt.Errorf("is required when PLATFORM_ENV=%s (at least 32 random bytes, the same on every node; "+
			"e.g. openssl rand -hex 32)", EnvProduction)
	}
	if v == "" {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("generate: %w", err)
		}
		*generated = append(*generated, name)
		return b, nil
	}
	if len(v) < 32 {
		return nil, fmt.Errorf("must be at least 32 bytes")
	}
	return []byte(v), nil
}

// key32 decodes a 32-byte key given as 64 hex characters or standard base64.
func key32(v string) ([]byte, error) {
	v = strings.TrimSpace(v)
	if b, err := hex.DecodeString(v); err == nil && len(b) == 32 {
		return b, nil
	}
	if b, err := base64.StdEncoding.DecodeString(v); err == nil && len(b) == 32 {
		return b, nil
	}
	return nil, fmt.Errorf("must be 32 bytes as 64 hex characters or base64")
}
