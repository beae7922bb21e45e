package keys

import (
	"context"
	"crypto/hmac"
	"fmt"
	"math"
	"time"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/pace"
	"github.com/bizmsg/platform/platform/ratelimit"
	"github.com/bizmsg/platform/platform/sqlq"
)

// Authentication failure codes. Expired and revoked are told apart only once
// the presented key has proven genuine, so only its holder learns them.
const (
	CodeInvalidKey = "invalid_api_key"
	CodeExpiredKey = "api_key_expired"
	CodeRevokedKey = "api_key_revoked"
)

// Auth is an authenticated API key and the organization it belongs to.
type Auth struct {
	Key Key
	Org accounts.Organization
	// Member is the user the key acts for (its creator) as a member of Org,
	// read with the key; nil when unknown or no longer a member.
	Member *accounts.User
	// Rate is the request's decision under the key's request rate
	// (RequestLimit), made with the key's lookup; nil without Config.Pace.
	Rate *ratelimit.Decision
}

// RequestLimit is the request rate of a key of org: the organization's own
// api_rate_limit and api_rate_burst, else def's.
func RequestLimit(org accounts.Organization, def ratelimit.Limit) ratelimit.Limit {
	if r := org.APIRateLimit; r != nil {
		def.Rate = *r
	}
	if b := org.APIRateBurst; b != nil {
		def.Burst = *b
	}
	return def
}

// rated reports whether l is decided in the store: the authentication
// statement's test (rate > 0, finite, burst >= 1). Any other limit allows
// every request.
func rated(l ratelimit.Limit) bool { return l.Valid() && !math.IsInf(l.Rate, 1) }

// lookup is one authentication waiting for its run: the presented key's
// prefix and keyed hash.
type lookup struct {
	prefix string
	hash   []byte
}

// storedKey is what the authentication statement read and decided for one
// authentication.
type storedKey struct {
	auth   Auth
	hash   []byte
	schema *string
	// now is the run's time: what expiry was checked against and
	// last_used_at written.
	now     time.Time
	touched bool
	// idx, from and to are the request's place among its key's rated
	// requests of the run and the key's pace.AllowStep outcome; nil when
	// not rated.
	idx      *int64
	from, to *float64
}

// Authenticate checks a presented API key. A malformed key (wrong marker,
// length, alphabet or checksum) is refused before any database work.
// Otherwise one statement (queries/fragments/authenticate.sql) finds the key and its organization and,
// for a genuine live key, decides its request rate (Config.Pace) and writes
// last_used_at if it is older than the touch interval (at most one write
// per key per interval, however many nodes serve the key). The keyed hash
// is compared in constant time, then revocation and expiry are checked
// against the clock. Every failure is a 401 apperr.
//
// The statement is shared by the authentications that wait while the
// process's runs are all busy (Config.Batch): one round trip for many
// requests, whatever their organizations. A run starts only after every
// call it serves arrived, so it sees every revocation committed before the
// request (docs/api.md, §API keys: revocation is immediate on every node).
func (s *Service) Authenticate(ctx context.Context, plain string) (*Auth, error) {
	prefix, err := apikey.Parse(plain)
	if err != nil {
		return nil, invalidKey()
	}
	// Hashed whether or not the prefix is known, so an unknown prefix costs
	// the same as a wrong key.
	hash := s.cfg.Hasher.Hash(plain)
	if s.cfg.Pace != nil {
		s.cfg.Pace.SweepDue(ctx)
	}
	found, err := s.finder.Do(ctx, struct{}{}, lookup{prefix: prefix, hash: hash})
	if err != nil {
		return nil, fmt.Errorf("authenticate api key: %w", err)
	}
	if found == nil || !hmac.Equal(hash, found.hash) {
		return nil, invalidKey()
	}
	a := found.auth
	switch a.Key.Status(found.now) {
	case StatusRevoked:
		return nil, apperr.New(apperr.KindUnauthenticated, CodeRevokedKey, "This API key has been revoked.")
	case StatusExpired:
		return nil, apperr.New(apperr.KindUnauthenticated, CodeExpiredKey, "This API key has expired.")
	}
	a.Org.ID = a.Key.OrgID
	a.Org.CreatedAt = clock.Stamp(a.Org.CreatedAt)
	if a.Org.Tenant, err = db.StoredTenant(a.Org.ID, found.schema); err != nil {
		return nil, fmt.Errorf("authenticate api key: %w", err)
	}
	if found.touched {
		a.Key.LastUsedAt = &found.now
	}
	if s.cfg.Pace != nil {
		l := RequestLimit(a.Org, s.cfg.RequestRate)
		d := ratelimit.Decision{Allowed: true, Limit: l}
		if rated(l) {
			if found.idx == nil || found.from == nil || found.to == nil {
				return nil, fmt.Errorf("authenticate api key %d: no rate decision", a.Key.ID)
			}
			p := pace.Limit{Rate: l.Rate, Burst: l.Burst}
			d = ratelimit.FromPace(l, pace.Decide(p, int(*found.idx), *found.from, *found.to))
		}
		a.Rate = &d
	}
	return &a, nil
}

// findKeys runs the authentication statement for a batch.Batcher run and
// returns each item's key, or nil when no key has its prefix. A run of
// one runs authenticate_one, a run of several authenticate_many: both are
// planned once per connection (a generic plan), not at every run, as pgx
// keeps them prepared; the statement takes 0.5 to 0.6 ms to plan, three
// times its execution.
func (s *Service) findKeys(ctx context.Context, _ struct{}, items []lookup) ([]*storedKey, error) {
	query, prefixes, hashes := "authenticate_one", any(items[0].prefix), any(items[0].hash)
	if len(items) > 1 {
		ps, hs := make([]string, len(items)), make([][]byte, len(items))
		for i, it := range items {
			ps[i], hs[i] = it.prefix, it.hash
		}
		query, prefixes, hashes = "authenticate_many", ps, hs
	}
	now := s.cfg.Clock.Now()
	def := s.cfg.RequestRate
	rows, err := db.QueryNamed(ctx, s.db.Pool, s.q, query, "", sqlq.Args{"prefix": prefixes, "hash": hashes, "now": now,
		"rates": s.cfg.Pace != nil, "rate": def.Rate, "burst": int32(def.Burst),
		"touched_before": now.Add(-s.cfg.TouchInterval)})
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]*storedKey, len(items))
	written := make(map[int64]bool)
	for rows.Next() {
		k := &storedKey{now: now}
		a := &k.auth
		var ord int64
		var u accounts.User
		var userID *int64
		var userName, userEmail, userRole *string
		var userCreated *time.Time
		if err := rows.Scan(append([]any{&ord}, keyFields(&a.Key, &k.hash, &a.Org.Name, &k.schema, &a.Org.SubscriptionStatus,
			&a.Org.DefaultDailyLimit, &a.Org.CreatedAt, &a.Org.APIRateLimit, &a.Org.APIRateBurst,
			&userID, &userName, &userEmail, &userRole, &userCreated,
			&k.touched, &k.idx, &k.from, &k.to)...)...); err != nil {
			return nil, err
		}
		if userID != nil {
			u = accounts.User{ID: *userID, Name: *userName, Email: *userEmail, Role: *userRole, CreatedAt: clock.Stamp(*userCreated)}
			a.Member = &u
		}
		if k.touched {
			written[a.Key.ID] = true
		}
		if ord < 1 || int(ord) > len(items) {
			return nil, fmt.Errorf("authenticate: row for item %d of %d", ord, len(items))
		}
		out[ord-1] = k
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	s.lastUsedWrites.Add(int64(len(written)))
	return out, nil
}

func invalidKey() error {
	return apperr.New(apperr.KindUnauthenticated, CodeInvalidKey, "The API key is invalid.")
}

// keyFields are the scan destinations of a key's columns into k (the
// authentication statement's, in order), then extra.
func keyFields(k *Key, extra ...any) []any {
	return append([]any{&k.ID, &k.OrgID, &k.CreatedBy, &k.Name, &k.Prefix, &k.Scopes,
		&k.ExpiresAt, &k.RevokedAt, &k.LastUsedAt, &k.CreatedAt, &k.Sealed}, extra...)
}
