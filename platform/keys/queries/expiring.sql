-- The active keys that expire in the window, with their organization's
-- schema, oldest first.
SELECT k.id, k.organization_id, k.created_by_user_id, k.name, k.prefix, k.scopes, k.expires_at,
       k.revoked_at, k.last_used_at, k.created_at, k.key_sealed IS NOT NULL AS sealed, o.schema_name
FROM central.api_keys k JOIN central.organizations o ON o.id = k.organization_id
WHERE k.revoked_at IS NULL AND k.expires_at > ?from::timestamptz AND k.expires_at <= ?to::timestamptz
  AND o.schema_name IS NOT NULL
ORDER BY k.id
