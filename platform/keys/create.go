package keys

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/audit"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
)

// CreateRequest is the body of POST /api-keys on both APIs, kept raw so that
// every field is checked and reported at once (a non-integer expires_in_days
// is a field error, not a decoding failure).
type CreateRequest struct {
	Name          json.RawMessage `json:"name"`
	Scopes        json.RawMessage `json:"scopes"`
	ExpiresInDays json.RawMessage `json:"expires_in_days"`
}

// Spec is a validated key creation request.
type Spec struct {
	// Name labels the key.
	Name string
	// Scopes are normalised (deduplicated, sorted, "*" alone if present).
	Scopes []string
	// ExpiresInDays is 1..365.
	ExpiresInDays int
}

// Spec validates the request. Every problem is reported as a field error of
// one 422 apperr.
func (r CreateRequest) Spec() (Spec, error) {
	var (
		v    apperr.Validation
		spec Spec
	)
	spec.Name = parseName(&v, r.Name)
	spec.Scopes = parseScopes(&v, r.Scopes)
	spec.ExpiresInDays = parseExpiresInDays(&v, r.ExpiresInDays)
	if err := v.Err(); err != nil {
		return Spec{}, err
	}
	return spec, nil
}

func isAbsent(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

func parseName(v *apperr.Validation, raw json.RawMessage) string {
	if isAbsent(raw) {
		v.Add("name", "is required")
		return ""
	}
	var name string
	if err := json.Unmarshal(raw, &name); err != nil {
		v.Add("name", "must be a string")
		return ""
	}
	name = strings.TrimSpace(name)
	if name == "" {
		v.Add("name", "is required")
	} else {
		v.Text("name", name, MaxNameLength)
	}
	return name
}

func parseScopes(v *apperr.Validation, raw json.RawMessage) []string {
	if isAbsent(raw) {
		v.Add("scopes", "is required")
		return nil
	}
	var scopes []string
	if err := json.Unmarshal(raw, &scopes); err != nil {
		v.Add("scopes", "must be an array of strings")
		return nil
	}
	out, err := apikey.Normalize(scopes)
	if err != nil {
		v.Add("scopes", err.Error()+"; valid scopes are "+strings.Join(apikey.Scopes(), ", "))
		return nil
	}
	return out
}

func parseExpiresInDays(v *apperr.Validation, raw json.RawMessage) int {
	if isAbsent(raw) {
		return DefaultExpiresInDays
	}
	msg := fmt.Sprintf("must be an integer from %d to %d", MinExpiresInDays, MaxExpiresInDays)
	s := string(bytes.TrimSpace(raw))
	// Only a JSON number written as an integer counts: not "30", 30.5 or 3e1.
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < MinExpiresInDays || n > MaxExpiresInDays {
		v.Add("expires_in_days", msg)
		return 0
	}
	return int(n)
}

// Actor is who creates or revokes a key.
type Actor struct {
	// UserID is the dashboard user, or the creator of the acting key; 0 when
	// unknown. New keys record it as their creator.
	UserID int64
	// KeyID is the API key making the request on the Tenant API; 0 on the
	// dashboard.
	KeyID int64
	// Scopes restrict what the actor may grant or revoke: a new key's scopes
	// must be covered by them, and so must a revoked key's. Nil means
	// unrestricted (an owner or admin on the dashboard).
	Scopes []string
}

// restricted reports whether the actor is bound by the scope rules.
func (a Actor) restricted() bool { return a.Scopes != nil }

// missingScopes returns the scopes of want that have does not cover.
func missingScopes(want, have []string) []string {
	var missing []string
	for _, s := range want {
		if !apikey.Covers(have, s) {
			missing = append(missing, s)
		}
	}
	return missing
}

// insufficientScope is the 403 for a key that may not grant or revoke scopes.
func insufficientScope(msg string, missing []string) error {
	e := apperr.Forbidden("insufficient_scope", msg+" Missing scope(s): "+strings.Join(missing, ", ")+".")
	e.Details = map[string]any{"missing_scopes": missing}
	return e
}

// maxPrefixAttempts bounds retries when a new key's prefix collides with an
// existing one (≈ 2^-47 per key; retried only for robustness).
const maxPrefixAttempts = 3

// Created is a newly created key and its plain value, which is shown once.
type Created struct {
	Key   Key
	Plain string
}

// Resource renders the created key with its plain value.
func (c Created) Resource(now time.Time) Resource {
	r := c.Key.Resource(now)
	r.PlainTextKey = c.Plain
	return r
}

// Create issues a key for organization orgID. A restricted actor may only
// grant scopes it holds (403 insufficient_scope otherwise). The key is
// recorded in the audit log in the same transaction.
func (s *Service) Create(ctx context.Context, orgID int64, actor Actor, spec Spec) (*Created, error) {
	if actor.restricted() {
		if missing := missingScopes(spec.Scopes, actor.Scopes); len(missing) > 0 {
			return nil, insufficientScope("An API key can only create keys with scopes it holds itself.", missing)
		}
	}
	now := clock.Stamp(s.cfg.Clock.Now())
	expires := now.Add(time.Duration(spec.ExpiresInDays) * 24 * time.Hour)
	for attempt := 1; ; attempt++ {
		created, err := s.insert(ctx, orgID, actor, spec, now, expires)
		if err == nil {
			return created, nil
		}
		if !db.IsUniqueViolation(err, "api_keys_prefix_key") || attempt == maxPrefixAttempts {
			return nil, fmt.Errorf("create api key: %w", err)
		}
	}
}

func (s *Service) insert(ctx context.Context, orgID int64, actor Actor, spec Spec, now, expires time.Time) (*Created, error) {
	k, err := apikey.Generate()
	if err != nil {
		return nil, err
	}
	var sealed []byte
	if s.cfg.Sealer != nil {
		if sealed, err = s.cfg.Sealer.Seal(k.Plain, []byte(k.Prefix)); err != nil {
			return nil, fmt.Errorf("seal: %w", err)
		}
	}
	key := Key{
		OrgID: orgID, CreatedBy: actor.UserID, Name: spec.Name, Prefix: k.Prefix,
		Scopes: spec.Scopes, ExpiresAt: expires, CreatedAt: now, Sealed: sealed != nil,
	}
	err = s.db.RunInTx(ctx, func(tx db.Tx) error {
		row := keyRow{
			OrganizationID: orgID, CreatedByUserID: actor.UserID, Name: spec.Name, Prefix: k.Prefix,
			KeyHash: s.cfg.Hasher.Hash(k.Plain), KeySealed: sealed, Scopes: spec.Scopes, ExpiresAt: expires, CreatedAt: now,
		}
		if _, err := tx.Bun.NewInsert().Model(&row).ExcludeColumn("id", "revoked_at", "last_used_at").
			Returning("id").Exec(ctx); err != nil {
			return err
		}
		key.ID = row.ID
		return record(ctx, tx.Pgx(), orgID, actor, audit.ActionAPIKeyCreate, key, now)
	})
	if err != nil {
		return nil, err
	}
	return &Created{Key: key, Plain: k.Plain}, nil
}

// record writes an action on a key to the audit log (platform/audit), in
// the change's transaction. The actor is the user; a Tenant API key acting
// for no member is the actor itself, and a change with neither is the
// system's.
func record(ctx context.Context, tx pgx.Tx, orgID int64, actor Actor, action string, k Key, now time.Time) error {
	details := map[string]any{"prefix": k.Prefix, "name": k.Name, "scopes": k.Scopes}
	if actor.KeyID != 0 {
		details["via_api_key_id"] = actor.KeyID
	}
	return audit.Record(ctx, tx, audit.Entry{
		OrgID:   orgID,
		Actor:   actor.auditActor(),
		Action:  action,
		Target:  audit.Target{Type: audit.TargetAPIKey, ID: k.ID},
		Details: details,
		At:      now,
	})
}

// auditActor is the audit log's actor of a.
func (a Actor) auditActor() audit.Actor { return audit.Requester(a.UserID, a.KeyID) }

// errNotFound is the 404 for a key id that does not exist in the caller's
// organization (whether or not it exists in another).
func errNotFound() error { return apperr.NotFound("API key") }
