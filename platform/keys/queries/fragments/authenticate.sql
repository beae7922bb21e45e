-- The whole database work of an authentication, for the authentications
-- of a run together, after the step items (their prefixes and the keyed
-- hashes of the keys presented, numbered in arrival order, ord), which
-- authenticate_one and authenticate_many write: one round trip. Its steps:
--   found: each item's key by its prefix, with its organization and the
--     member the key acts for, each probed per item on its index (OFFSET
--     0 keeps the planner from joining them otherwise, whatever number of
--     items it expects); live when the presented key is the stored one
--     (hash), not revoked and not expired at now (the Service's clock);
--   rated: when rates (Config.Pace), each live item whose limit (the
--     organization's, else rate and burst) is decided, numbered per key in
--     arrival order (idx); pace_v counts them per bucket "key:<id>", and
--     pace's allow_step (pace.AllowStep) decides them under the buckets'
--     row locks;
--   due, touched: last_used_at = now for the live keys whose value is at
--     or before touched_before, skipping the rows another transaction
--     holds (another node's touch, a revocation) instead of waiting for
--     them: a key skipped now is written by a later request. The ids go as
--     arrays (= ANY (ARRAY(...))), which the planner looks up on the
--     primary key however many it expects.
-- Only a key proven genuine (its hash) and live takes a rate slot or a
-- touch; the caller still compares the hash in constant time. The hash
-- comparison in SQL is not constant-time, which gives nothing away: the
-- caller cannot choose the keyed hash of what it presents.
found AS (
  SELECT i.ord, k.*, k.key_hash = i.hash AND k.revoked_at IS NULL AND k.expires_at > ?now AS live,
         o.name AS org_name, o.schema_name, o.subscription_status, o.default_daily_limit,
         o.created_at AS org_created_at, o.api_rate_limit, o.api_rate_burst,
         coalesce(o.api_rate_limit, ?rate) AS rate, coalesce(o.api_rate_burst, ?burst) AS burst,
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
    FROM found WHERE live AND ?rates AND rate > 0 AND rate < 'Infinity' AND burst >= 1),
pace_v AS (
  SELECT key, min(t) AS t, min(tau) AS tau, count(*)::int AS n FROM rated GROUP BY key),
?{allow_step},
due AS (
  SELECT id FROM central.api_keys
   WHERE id = ANY (ARRAY(SELECT id FROM found WHERE live)) AND (last_used_at IS NULL OR last_used_at <= ?touched_before)
     FOR UPDATE SKIP LOCKED),
touched AS (
  UPDATE central.api_keys k SET last_used_at = ?now
   WHERE k.id = ANY (ARRAY(SELECT id FROM due)) RETURNING k.id)
-- The key (as keyFields scans it) and its hash, its organization, its
-- member, whether it was touched, and its rate decision.
SELECT k.ord, k.id, k.organization_id, coalesce(k.created_by_user_id, 0), k.name, k.prefix, k.scopes,
       k.expires_at, k.revoked_at, k.last_used_at, k.created_at, k.key_sealed IS NOT NULL, k.key_hash,
       k.org_name, k.schema_name, k.subscription_status, k.default_daily_limit, k.org_created_at,
       k.api_rate_limit, k.api_rate_burst,
       k.user_id, k.user_name, k.user_email, k.user_role, k.user_created_at,
       EXISTS (SELECT FROM touched t WHERE t.id = k.id), r.idx, p.from_s, p.to_s
  FROM found k LEFT JOIN rated r ON r.ord = k.ord LEFT JOIN pace_out p ON p.key = r.key
