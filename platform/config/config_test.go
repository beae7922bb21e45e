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
		c.DBAcquireTimeout != 5*time.Second || c.DBConnectTimeout != 60*time.Second || c.Env != EnvDevelopment ||
		c.WebhookAllowPrivate || c.WebhookWorkers != 100 || c.DBMaxConnTenants != 1000 {
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
		{"bad webhook workers", map[string]string{"WEBHOOK_WORKERS": "0"}, "WEBHOOK_WORKERS"},
		{"bad webhook busy rate", map[string]string{"WEBHOOK_BUSY_RATE": "0"}, "WEBHOOK_BUSY_RATE"},
		{"bad acquire timeout", map[string]string{"DB_ACQUIRE_TIMEOUT": "0s"}, "DB_ACQUIRE_TIMEOUT"},
		{"negative prepared statements", map[string]string{"DB_PREPARED_STATEMENTS": "-1"}, "DB_PREPARED_STATEMENTS"},
		{"negative tenants a connection", map[string]string{"DB_MAX_CONN_TENANTS": "-1"}, "DB_MAX_CONN_TENANTS"},
		{"tenants a connection not a number", map[string]string{"DB_MAX_CONN_TENANTS": "many"}, "DB_MAX_CONN_TENANTS"},
		{"ops user without password", map[string]string{"OPS_USER": "ops"}, "OPS_USER/OPS_PASSWORD"},
		{"ops password without user", map[string]string{"OPS_PASSWORD": "a-long-password"}, "OPS_USER/OPS_PASSWORD"},
		{"short ops password", map[string]string{"OPS_USER": "ops", "OPS_PASSWORD": "short"}, "OPS_PASSWORD"},
		{"pool past int32", map[string]string{"DB_MAX_CONNS": "2147483648"}, "DB_MAX_CONNS"},
		{"webhook private not a boolean", map[string]string{"WEBHOOK_ALLOW_PRIVATE": "yes"}, "WEBHOOK_ALLOW_PRIVATE"},
		{"bad connect timeout", map[string]string{"DB_CONNECT_TIMEOUT": "forever"}, "DB_CONNECT_TIMEOUT"},
		{"zero connect timeout", map[string]string{"DB_CONNECT_TIMEOUT": "0s"}, "DB_CONNECT_TIMEOUT"},
		{"unknown environment", map[string]string{"PLATFORM_ENV": "staging"}, "PLATFORM_ENV"},
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
		"DB_MAX_CONN_TENANTS":    "0",
		"DB_ACQUIRE_TIMEOUT":     "250ms",
		"WEBHOOK_WORKERS":        "24",
		"WEBHOOK_BUSY_RATE":      "2.5",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Generated) != 0 || len(c.APIKeyEncryptionKey) != 32 || string(c.JWTPreviousSecret) != strings.Repeat("o", 32) || c.SenderRate != 5 || c.SenderBurst != 5 || c.HTTPAddr != "127.0.0.1:9000" || c.BatchSize != 1 || c.DBPreparedStatements != 0 || c.DBMaxConnTenants != 0 || c.DBAcquireTimeout != 250*time.Millisecond ||
		c.WebhookWorkers != 24 || c.WebhookBusyRate != 2.5 {
		t.Fatalf("config = %+v", c)
	}
}

// PLATFORM_ENV=production generates no secret: each unset required secret
// is named in the error, with how to make one, and a production
// configuration with them set loads without generating anything.
func TestLoadProductionRequiresSecrets(t *testing.T) {
	t.Parallel()
	jwt, pepper := strings.Repeat("j", 32), strings.Repeat("p", 32)
	tests := []struct {
		name    string
		env     map[string]string
		missing []string
	}{
		{"both unset", map[string]string{}, []string{"JWT_SECRET", "API_KEY_PEPPER"}},
		{"jwt secret unset", map[string]string{"API_KEY_PEPPER": pepper}, []string{"JWT_SECRET"}},
		{"pepper unset", map[string]string{"JWT_SECRET": jwt}, []string{"API_KEY_PEPPER"}},
		{"both set", map[string]string{"JWT_SECRET": jwt, "API_KEY_PEPPER": pepper}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.env["PLATFORM_ENV"] = "Production"
			c, err := Load(env(tt.env))
			if len(tt.missing) == 0 {
				if err != nil || len(c.Generated) != 0 || c.Env != EnvProduction {
					t.Fatalf("Load = %+v, %v; want production with nothing generated", c.Generated, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("production started with %v unset", tt.missing)
			}
			for _, name := range tt.missing {
				if !strings.Contains(err.Error(), name+": is required when PLATFORM_ENV=production") {
					t.Errorf("error %q does not name %s as required", err, name)
				}
			}
			if !strings.Contains(err.Error(), "openssl rand -hex 32") {
				t.Errorf("error %q does not say how to make a secret", err)
			}
		})
	}
}

// SecretField names the field of every required secret, and only those.
func TestSecretField(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(RequiredSecrets(), ",") != strings.Join(c.Generated, ",") {
		t.Fatalf("required %v, generated %v: every generated secret must be required in production", RequiredSecrets(), c.Generated)
	}
	for _, name := range RequiredSecrets() {
		f := c.SecretField(name)
		if f == nil || len(*f) != 32 {
			t.Fatalf("SecretField(%s) = %v", name, f)
		}
	}
	*c.SecretField("JWT_SECRET") = []byte("kept")
	if string(c.JWTSecret) != "kept" {
		t.Fatal("SecretField does not point at JWTSecret")
	}
	if c.SecretField("API_KEY_ENCRYPTION_KEY") != nil {
		t.Fatal("SecretField names a secret that is never generated")
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
