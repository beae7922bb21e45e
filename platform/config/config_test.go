package config

import (
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.DatabaseURL != DefaultDatabaseURL || c.HTTPAddr != ":8080" || c.Network != "builtin" ||
		c.DefaultDailyLimit != 1000 || c.SenderRate != 20 || c.SenderBurst != 40 || c.NetworkTimeout != 5*time.Second ||
		c.DBAcquireTimeout != 5*time.Second || c.WebhookAllowPrivate {
		t.Fatalf("defaults = %+v", c)
	}
	if len(c.JWTSecret) != 32 || len(c.APIKeyPepper) != 32 || c.APIKeyEncryptionKey != nil {
		t.Fatalf("secrets not generated as expected")
	}
	if strings.Join(c.Generated, ",") != "JWT_SECRET,API_KEY_PEPPER" {
		t.Fatalf("Generated = %v", c.Generated)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"short jwt secret", map[string]string{"JWT_SECRET": "short"}, "JWT_SECRET"},
		{"short previous jwt secret", map[string]string{"JWT_PREVIOUS_SECRET": "short"}, "JWT_PREVIOUS_SECRET"},
		{"bad limit", map[string]string{"DEFAULT_DAILY_LIMIT": "0"}, "DEFAULT_DAILY_LIMIT"},
		{"bad rate", map[string]string{"SENDER_RATE": "fast"}, "SENDER_RATE"},
		{"bad network", map[string]string{"NETWORK": "carrier-pigeon"}, "NETWORK"},
		{"http network without url", map[string]string{"NETWORK": "http"}, "NETWORK_URL"},
		{"bad network timeout", map[string]string{"NETWORK_TIMEOUT": "soon"}, "NETWORK_TIMEOUT"},
		{"bad encryption key", map[string]string{"API_KEY_ENCRYPTION_KEY": "abcd"}, "API_KEY_ENCRYPTION_KEY"},
		{"bad log level", map[string]string{"LOG_LEVEL": "loud"}, "LOG_LEVEL"},
		{"bad batch size", map[string]string{"BATCH_SIZE": "0"}, "BATCH_SIZE"},
		{"bad acquire timeout", map[string]string{"DB_ACQUIRE_TIMEOUT": "0s"}, "DB_ACQUIRE_TIMEOUT"},
		{"negative prepared statements", map[string]string{"DB_PREPARED_STATEMENTS": "-1"}, "DB_PREPARED_STATEMENTS"},
		{"ops user without password", map[string]string{"OPS_USER": "ops"}, "OPS_USER/OPS_PASSWORD"},
		{"ops password without user", map[string]string{"OPS_PASSWORD": "a-long-password"}, "OPS_USER/OPS_PASSWORD"},
		{"short ops password", map[string]string{"OPS_USER": "ops", "OPS_PASSWORD": "short"}, "OPS_PASSWORD"},
		{"pool past int32", map[string]string{"DB_MAX_CONNS": "2147483648"}, "DB_MAX_CONNS"},
		{"webhook private not a boolean", map[string]string{"WEBHOOK_ALLOW_PRIVATE": "yes"}, "WEBHOOK_ALLOW_PRIVATE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(env(tt.env))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want mention of %s", err, tt.want)
			}
		})
	}
}

func TestLoadValues(t *testing.T) {
	t.Parallel()
	c, err := Load(env(map[string]string{
		"JWT_SECRET":             strings.Repeat("j", 32),
		"JWT_PREVIOUS_SECRET":    strings.Repeat("o", 32),
		"API_KEY_PEPPER":         strings.Repeat("p", 40),
		"API_KEY_ENCRYPTION_KEY": strings.Repeat("ab", 32),
		"SENDER_RATE":            "5",
		"SENDER_BURST":           "5",
		"HTTP_ADDR":              "127.0.0.1:9000",
		"BATCH_SIZE":             "1",
		"DB_PREPARED_STATEMENTS": "0",
		"DB_ACQUIRE_TIMEOUT":     "250ms",
		"WEBHOOK_ALLOW_PRIVATE":  "true",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Generated) != 0 || len(c.APIKeyEncryptionKey) != 32 || string(c.JWTPreviousSecret) != strings.Repeat("o", 32) || c.SenderRate != 5 || c.SenderBurst != 5 || c.HTTPAddr != "127.0.0.1:9000" || c.BatchSize != 1 || c.DBPreparedStatements != 0 || c.DBAcquireTimeout != 250*time.Millisecond || !c.WebhookAllowPrivate {
		t.Fatalf("config = %+v", c)
	}
}

func TestLoadWebhookAllowPrivate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value string
		want  bool
	}{
		{"", false},
		{"false", false},
		{"FALSE", false},
		{"true", true},
		{" True ", true},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			t.Parallel()
			c, err := Load(env(map[string]string{"WEBHOOK_ALLOW_PRIVATE": tt.value}))
			if err != nil {
				t.Fatal(err)
			}
			if c.WebhookAllowPrivate != tt.want {
				t.Fatalf("WEBHOOK_ALLOW_PRIVATE=%q: %v, want %v", tt.value, c.WebhookAllowPrivate, tt.want)
			}
		})
	}
}
