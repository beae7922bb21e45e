-- The live session of a token hash with its member's current role, its
-- organization and its user: not idle since idle_since, not past its
-- absolute expiry.
SELECT s.id, s.user_id, s.organization_id, s.last_seen_at, m.role, o.schema_name, o.name AS org_name,
       o.default_daily_limit, u.name AS user_name, u.email AS user_email
FROM central.web_sessions s
JOIN central.memberships m ON m.organization_id = s.organization_id AND m.user_id = s.user_id
JOIN central.organizations o ON o.id = s.organization_id
JOIN central.users u ON u.id = s.user_id
WHERE s.token_hash = ?token_hash::bytea AND s.expires_at > ?now::timestamptz
  AND s.last_seen_at > ?idle_since::timestamptz
