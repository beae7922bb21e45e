-- Scheduled message id canceled at at while it is still scheduled, under
-- its row lock (UPDATE ... WHERE status = 'scheduled', the condition a
-- release also holds to, so that of a cancellation and a release exactly
-- one changes the message). It returns the message as changed, its status
-- before first (messages.ChangedColumns), or nothing when it was no longer
-- scheduled.
WITH m AS (
  UPDATE ?schema.messages x SET status = 'canceled', canceled_at = ?at::timestamptz, updated_at = ?at::timestamptz
   WHERE x.id = ?id::bigint AND x.status = 'scheduled'
  RETURNING 'scheduled'::text AS old_status, x.*)
SELECT m.old_status, ?{message_columns} FROM m
