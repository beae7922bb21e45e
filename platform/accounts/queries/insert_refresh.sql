-- A refresh token's hash, in family (a new family when it is '').
INSERT INTO central.refresh_tokens (user_id, organization_id, family_id, token_hash, expires_at, created_at)
VALUES (?user_id::bigint, ?org_id::bigint, coalesce(nullif(?family::text, '')::uuid, gen_random_uuid()),
        ?hash::bytea, ?expires_at::timestamptz, ?now::timestamptz)
