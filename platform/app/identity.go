package app

import (
	"fmt"

	"github.com/bizmsg/platform/central"
	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/audit"
	"github.com/bizmsg/platform/platform/keys"
	"github.com/bizmsg/platform/platform/ratelimit"
	"github.com/bizmsg/platform/platform/token"
	"github.com/bizmsg/platform/tenant"
)

// identity builds the API-key service, the Central API's service, the audit
// log's reader and the two APIs' HTTP layers from the configuration.
func (a *App) identity() error {
	hasher, err := apikey.NewHasher(a.cfg.APIKeyPepper)
	if err != nil {
		return fmt.Errorf("api key hasher: %w", err)
	}
	var sealer *apikey.Sealer
	if len(a.cfg.APIKeyEncryptionKey) > 0 {
		if sealer, err = apikey.NewSealer(a.cfg.APIKeyEncryptionKey); err != nil {
			return fmt.Errorf("api key sealer: %w", err)
		}
	}
	// One bucket per key for all API processes, decided in the statement
	// that authenticates the key. Request rates are wall-clock pace, not
	// business time: the store keeps the database's time even when the app
	// runs on a test clock.
	if a.Keys, err = keys.New(keys.Config{DB: a.DB, Hasher: hasher, Sealer: sealer, Clock: a.clock, Logger: a.log,
		Batch: a.batches("auth"), Events: a.Webhooks,
		Pace: a.pace, RequestRate: ratelimit.Limit{Rate: a.cfg.APIRateLimit, Burst: a.cfg.APIRateBurst}}); err != nil {
		return err
	}
	issuer, err := token.NewIssuer(token.Config{
		Keys:  accounts.SigningKeys(a.cfg.JWTSecret, a.cfg.JWTPreviousSecret),
		Clock: a.clock,
	})
	if err != nil {
		return fmt.Errorf("token issuer: %w", err)
	}
	if a.Accounts, err = accounts.New(accounts.Config{DB: a.DB,
		Migrator:          a.Migrator,
		Issuer:            issuer,
		Clock:             a.clock,
		DefaultDailyLimit: a.cfg.DefaultDailyLimit,
		Logger:            a.log,
	}); err != nil {
		return err
	}
	if a.tenantAPI, err = tenant.New(tenant.Config{Keys: a.Keys, Logger: a.log}); err != nil {
		return err
	}
	if a.centralAPI, err = central.New(central.Config{Accounts: a.Accounts, Keys: a.Keys}); err != nil {
		return err
	}
	if a.Audit, err = audit.New(audit.Config{DB: a.DB}); err != nil {
		return err
	}
	return nil
}
