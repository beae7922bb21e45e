-- A failed attempt of a pending delivery: its state (pending with its
-- next attempt, or failed), the answer's status, why, and how long it took.
UPDATE ?schema.webhook_deliveries
   SET state = ?state::text, attempts = attempts + 1, last_status_code = ?status::integer,
       last_error = ?last_error::text, latency_ms = ?latency_ms::integer,
       next_attempt_at = ?next_attempt_at::timestamptz, updated_at = ?now::timestamptz
 WHERE id = ?id AND state = 'pending'
