-- A pending delivery failed without an attempt: its endpoint is disabled.
UPDATE ?schema.webhook_deliveries
   SET state = 'failed', last_error = ?last_error::text, next_attempt_at = NULL, updated_at = ?now::timestamptz
 WHERE id = ?id AND state = 'pending'
