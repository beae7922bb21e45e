-- fail: queued message id failed with code and text at now, counted in
-- its day's 'deliver' failed counter, returning the change
-- (messages.ChangedColumns).
WITH m AS (
  UPDATE ?schema.messages
     SET status = 'failed', error_code = ?code::text, error_message = ?text::text,
         failed_at = ?now::timestamptz, updated_at = ?now::timestamptz
   WHERE id = ?id::bigint AND status = 'queued'
  RETURNING 'queued'::text AS old_status, *),
u AS (
  INSERT INTO ?schema.daily_usage AS u (sender_number_id, day, side, failed)
  SELECT sender_number_id, (created_at AT TIME ZONE 'UTC')::date, 'deliver', 1 FROM m
  ON CONFLICT (sender_number_id, day, side) DO UPDATE SET failed = u.failed + 1)
SELECT m.old_status, ?{message_columns} FROM m
