-- Requeue: message id, failed with code, queued again at now, its day's
-- failed count lowered; the result is 'requeued', else the message's
-- status ('' when there is none).
WITH m AS (
  UPDATE ?schema.messages x
     SET status = 'queued', error_code = NULL, error_message = NULL, failed_at = NULL,
         updated_at = ?now::timestamptz
   WHERE x.id = ?id::bigint AND x.status = 'failed' AND x.error_code = ?code::text
  RETURNING x.sender_number_id, x.created_at),
u AS (
  UPDATE ?schema.daily_usage d SET failed = d.failed - 1 FROM m
   WHERE d.side = 'deliver' AND d.sender_number_id = m.sender_number_id
     AND d.day = (m.created_at AT TIME ZONE 'UTC')::date AND d.failed > 0)
SELECT CASE WHEN EXISTS (SELECT 1 FROM m) THEN 'requeued'
            ELSE coalesce((SELECT status FROM ?schema.messages WHERE id = ?id::bigint), '') END
