-- An endpoint disabled after its attempts all failed for too long.
UPDATE ?schema.webhook_endpoints
   SET enabled = false, disabled_reason = ?reason::text, updated_at = ?now::timestamptz
 WHERE id = ?id
