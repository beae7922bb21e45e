-- The claim of messages ids (claimRows, statements.go): lock them (m),
-- reserve their senders' days (want, c, u), stamp those it claims (x).
WITH m AS (?{locked_messages}),
want AS (
  SELECT sender_number_id, (created_at AT TIME ZONE 'UTC')::date AS day, count(*) AS n,
         min(coalesce(sn_daily_limit_override, ?default_limit::int)) AS lim
    FROM m WHERE status = 'queued' AND dispatched_at IS NULL AND sn_status = 'active' AND blocker_id IS NULL
     AND NOT held
   GROUP BY 1, 2),
?{claim_reserve},
x AS (
  UPDATE ?schema.messages x SET dispatched_at = coalesce(x.dispatched_at, ?now::timestamptz), claimed_by = m.claimant,
         claimed_at = statement_timestamp(), updated_at = ?now::timestamptz
    FROM m LEFT JOIN u ON u.sender_number_id = m.sender_number_id
                      AND u.day = (m.created_at AT TIME ZONE 'UTC')::date
   WHERE x.id = m.id AND m.status = 'queued' AND m.blocker_id IS NULL AND NOT m.held
     AND (m.dispatched_at IS NOT NULL OR (u.sender_number_id IS NOT NULL AND m.sn_status = 'active'))
  RETURNING x.id)
SELECT m.*, x.id IS NOT NULL AS claimed, (SELECT count(*) FROM c) <> (SELECT count(*) FROM want) AS missing
  FROM m LEFT JOIN x ON x.id = m.id
