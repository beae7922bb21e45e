package config

// The values of PLATFORM_ENV.
const (
	// EnvDevelopment generates the secrets left unset (kept in the
	// database, so a restart keeps them), with a warning.
	EnvDevelopment = "development"
	// EnvProduction refuses to start while a required secret is unset.
	EnvProduction = "production"
)

// RequiredSecrets are the secrets production must set. In development an
// unset one is generated (Config.Generated) and the service keeps it in its
// database. API_KEY_ENCRYPTION_KEY is not among them: unset, it turns the
// encrypted key copies off rather than being generated. The OTP hash and
// sealing keys and the dashboard's CSRF key are derived from
// API_KEY_PEPPER, so they follow it.
func RequiredSecrets() []string { return []string{"JWT_SECRET", "API_KEY_PEPPER"} }

// SecretField returns the field that holds the secret named by its
// variable (one of RequiredSecrets), or nil for another name. The service
// sets it to the development value it keeps when the secret was generated.
func (c *Config) SecretField(name string) *[]byte {
	switch name {
	case "JWT_SECRET":
		return &c.JWTSecret
	case "API_KEY_PEPPER":
		return &c.APIKeyPepper
	default:
		return nil
	}
}
