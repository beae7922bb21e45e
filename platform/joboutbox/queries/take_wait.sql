-- take for Flush: the tenant's oldest outbox rows, once the transactions
-- that hold them have ended, deleted and returned oldest first.
WITH d AS (
  DELETE FROM ?schema.job_outbox
  WHERE id IN (SELECT id FROM ?schema.job_outbox ORDER BY id LIMIT ?limit::bigint FOR UPDATE)
  RETURNING id, kind, args, queue, priority, max_attempts, scheduled_at, unique_states)
SELECT kind, args::text, queue, priority, max_attempts, scheduled_at, unique_states FROM d ORDER BY id
