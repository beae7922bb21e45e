-- A new dashboard session of a user in an organization, the user's ended
-- sessions deleted on the way.
WITH expired AS (
    DELETE FROM central.web_sessions
    WHERE user_id = ?user_id::bigint AND (expires_at <= ?now::timestamptz OR last_seen_at <= ?idle_since::timestamptz))
INSERT INTO central.web_sessions (token_hash, user_id, organization_id, created_at, last_seen_at, expires_at)
VALUES (?token_hash::bytea, ?user_id::bigint, ?org_id::bigint, ?now::timestamptz, ?now::timestamptz,
        ?expires_at::timestamptz)
