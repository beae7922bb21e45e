-- A failed attempt's endpoint: its failure streak starts at now unless it
-- has started; returns the streak's start and whether it is enabled.
UPDATE ?schema.webhook_endpoints SET failing_since = coalesce(failing_since, ?now::timestamptz)
 WHERE id = ?id
RETURNING failing_since, enabled
