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

// rated reports whether l is decided in the store: authSQL's test (rate >
// 0, finite, burst >= 1). Any other limit allows every request.
func rated(l ratelimit.Limit) bool { return l.Valid() && !math.IsInf(l.Rate, 1) }

// authSQL is the whole database work of an authentication, for the
// authentications of a run together (items: their prefixes and the keyed
// hashes of the keys presented, numbered in arrival order): one round
// trip. Its steps:
//   - found: each item's key by its prefix, with its organization and the
//     member the key acts for, each probed per item on its index (OFFSET
//     0 keeps the planner from joining them otherwise, whatever number of
//     items it expects); live when the presented key is the stored one
//     (hash), not revoked and not expired at $3 (the Service's clock);
//   - rated: when $4 (Config.Pace), each live item whose limit (the
//     organization's, else $5 and $6) is decided, numbered per key in
//     arrival order (idx); pace_v counts them per bucket "key:<id>", and
//     pace.AllowStep decides them under the buckets' row locks;
//   - due, touched: last_used_at = $3 for the live keys whose value is at
//     or before $7, skipping the rows another transaction holds (another
//     node's touch, a revocation) instead of waiting for them: a key
//     skipped now is written by a later request. The ids go as arrays
//     (= ANY (ARRAY(...))), which the planner looks up on the primary key
//     however many it expects.
//
// Only a key proven genuine (its hash) and live takes a rate slot or a
// touch; the caller still compares the hash in constant time. The hash
// comparison in SQL is not constant-time, which gives nothing away: the
// caller cannot choose the keyed hash of what it presents.
const authSQL = `WITH items AS (%s),
	found AS (
	  SELECT i.ord, k.*, k.key_hash = i.hash AND k.revoked_at IS NULL AND k.expires_at > $3 AS live,
	         o.name AS org_name, o.schema_name, o.subscription_status, o.default_daily_limit,
	         o.created_at AS org_created_at, o.api_rate_limit, o.api_rate_burst,
	         coalesce(o.api_rate_limit, $5) AS rate, coalesce(o.api_rate_burst, $6) AS burst,
	         u.id AS user_id, u.name AS user_name, u.email AS user_email, u.role AS user_role,
	         u.created_at AS user_created_at
	    FROM items i
	    CROSS JOIN LATERAL (SELECT * FROM central.api_keys k WHERE k.prefix = i.prefix OFFSET 0) k
	    CROSS JOIN LATERAL (SELECT * FROM central.organizations o WHERE o.id = k.organization_id OFFSET 0) o
	    LEFT JOIN LATERAL (
	      SELECT u.id, u.name, u.email, m.role, u.created_at
	        FROM central.memberships m JOIN central.users u ON u.id = m.user_id
	       WHERE m.organization_id = k.organization_id AND m.user_id = k.created_by_user_id OFFSET 0) u ON true),
	rated AS (
	  SELECT ord, 'key:' || id AS key, 1 / rate AS t, burst / rate AS tau,
	         row_number() OVER (PARTITION BY id ORDER BY ord) AS idx
	    FROM found WHERE live AND $4 AND rate > 0 AND rate < 'Infinity' AND burst >= 1),
	pace_v AS (
	  SELECT key, min(t) AS t, min(tau) AS tau, count(*)::int AS n FROM rated GROUP BY key),
	` + pace.AllowStep + `,
	due AS (
	  SELECT id FROM central.api_keys
	   WHERE id = ANY (ARRAY(SELECT id FROM found WHERE live)) AND (last_used_at IS NULL OR last_used_at <= $7)
	     FOR UPDATE SKIP LOCKED),
	touched AS (
	  UPDATE central.api_keys k SET last_used_at = $3
	   WHERE k.id = ANY (ARRAY(SELECT id FROM due)) RETURNING k.id)
	SELECT k.ord, ` + keyColumns + `, k.key_hash,
	       k.org_name, k.schema_name, k.subscription_status, k.default_daily_limit, k.org_created_at,
	       k.api_rate_limit, k.api_rate_burst,
	       k.user_id, k.user_name, k.user_email, k.user_role, k.user_created_at,
	       EXISTS (SELECT FROM touched t WHERE t.id = k.id), r.idx, p.from_s, p.to_s
	  FROM found k LEFT JOIN rated r ON r.ord = k.ord LEFT JOIN pace_out p ON p.key = r.key`

// authOne and authMany are authSQL for a run of one ($1 its prefix, $2 its
// hash) and of several ($1 and $2 arrays). Both are planned once per
// connection (a generic plan), not at every run: the statement takes 0.5
// to 0.6 ms to plan, three times its execution. A run of one, what a
// process that is not busy runs, keeps a statement of scalars; unnest over
// the arrays would let Postgres see each run's length and plan each run
// afresh (a custom plan), which generate_subscripts (no such estimate)
// does not.
var (
	authOne  = fmt.Sprintf(authSQL, `SELECT $1::text AS prefix, $2::bytea AS hash, 1::bigint AS ord`)
	authMany = fmt.Sprintf(authSQL, `
	  SELECT ($1::text[])[g] AS prefix, ($2::bytea[])[g] AS hash, g::bigint AS ord
	    FROM generate_subscripts($1::text[], 1) AS g`)
)

// lookup is one authentication waiting for its run: the presented key's
// prefix and keyed hash.
type lookup struct {
	prefix string
	hash   []byte
}

// storedKey is what authSQL read and decided for one authentication.
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
// Otherwise one statement (authSQL) finds the key and its organization and,
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

// findKeys runs authSQL for a batch.Batcher run and returns each item's
// key, or nil when no key has its prefix.
func (s *Service) findKeys(ctx context.Context, _ struct{}, items []lookup) ([]*storedKey, error) {
	query, prefixes, hashes := authOne, any(items[0].prefix), any(items[0].hash)
	if len(items) > 1 {
		ps, hs := make([]string, len(items)), make([][]byte, len(items))
		for i, it := range items {
			ps[i], hs[i] = it.prefix, it.hash
		}
		query, prefixes, hashes = authMany, ps, hs
	}
	now := s.cfg.Clock.Now()
	def := s.cfg.RequestRate
	rows, err := s.db.Pool.Query(ctx, query, prefixes, hashes, now, s.cfg.Pace != nil,
		def.Rate, int32(def.Burst), now.Add(-s.cfg.TouchInterval))
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

// keyColumns are the columns of a key that keyFields scans, in order.
const keyColumns = `k.id, k.organization_id, coalesce(k.created_by_user_id, 0), k.name, k.prefix, k.scopes,
	k.expires_at, k.revoked_at, k.last_used_at, k.created_at, k.key_sealed IS NOT NULL`

// keyFields are the scan destinations of keyColumns into k, then extra.
func keyFields(k *Key, extra ...any) []any {
	return append([]any{&k.ID, &k.OrgID, &k.CreatedBy, &k.Name, &k.Prefix, &k.Scopes,
		&k.ExpiresAt, &k.RevokedAt, &k.LastUsedAt, &k.CreatedAt, &k.Sealed}, extra...)
}
