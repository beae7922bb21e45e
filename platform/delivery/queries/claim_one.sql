-- claim_many for one message id (claimRows): the same result at half the
-- planning cost, one counter row (statements.go).
WITH m AS (
  SELECT ?{delivery_columns}, (?{blocker}) AS blocker_id,
         (m.claimed_by IS NOT NULL AND m.claimed_by <> ?job::bigint
          AND m.claimed_at > statement_timestamp() - make_interval(secs => ?lease::float8)) AS held,
         ?job::bigint AS claimant
    FROM ?{delivery_from}
   WHERE m.id = ?id::bigint FOR UPDATE OF m),
c AS (
  SELECT d.sender_number_id FROM ?schema.daily_usage d JOIN m ON d.sender_number_id = m.sender_number_id
   WHERE d.day = (m.created_at AT TIME ZONE 'UTC')::date AND d.side = 'deliver'),
u AS (
  UPDATE ?schema.daily_usage d SET dispatched = d.dispatched + 1, bound = coalesce(m.sn_daily_limit_override, ?default_limit::int)
    FROM m
   WHERE d.sender_number_id = m.sender_number_id AND d.day = (m.created_at AT TIME ZONE 'UTC')::date AND d.side = 'deliver'
     AND m.status = 'queued' AND m.dispatched_at IS NULL AND m.sn_status = 'active' AND m.blocker_id IS NULL
     AND NOT m.held AND d.dispatched < coalesce(m.sn_daily_limit_override, ?default_limit::int)
  RETURNING d.dispatched),
x AS (
  UPDATE ?schema.messages x SET dispatched_at = coalesce(x.dispatched_at, ?now::timestamptz), claimed_by = ?job::bigint,
         claimed_at = statement_timestamp(), updated_at = ?now::timestamptz
    FROM m WHERE x.id = m.id AND m.status = 'queued' AND m.blocker_id IS NULL AND NOT m.held
     AND (m.dispatched_at IS NOT NULL OR EXISTS (SELECT 1 FROM u))
  RETURNING x.id)
SELECT m.*, EXISTS (SELECT 1 FROM x) AS claimed,
       m.status = 'queued' AND m.dispatched_at IS NULL AND m.sn_status = 'active' AND m.blocker_id IS NULL
       AND NOT m.held AND NOT EXISTS (SELECT 1 FROM c) AS missing
  FROM m
