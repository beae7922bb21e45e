-- Scheduled message id failed at at with error_code and error_message (a
-- release refused) while it is still scheduled, under its row lock, as
-- cancel_scheduled cancels it. It returns the message as changed, its
-- status before first, or nothing when it was no longer scheduled.
WITH m AS (
  UPDATE ?schema.messages x SET status = 'failed', failed_at = ?at::timestamptz, updated_at = ?at::timestamptz,
         error_code = ?error_code::text, error_message = ?error_message::text
   WHERE x.id = ?id::bigint AND x.status = 'scheduled'
  RETURNING 'scheduled'::text AS old_status, x.*)
SELECT m.old_status, ?{message_columns} FROM m
