-- Logout with a refresh token: revoke its family, if the token is the
-- caller's.
UPDATE central.refresh_tokens SET revoked_at = ?now::timestamptz
WHERE revoked_at IS NULL AND family_id = (
    SELECT family_id FROM central.refresh_tokens
    WHERE token_hash = ?hash::bytea AND user_id = ?user_id::bigint AND organization_id = ?org_id::bigint)
