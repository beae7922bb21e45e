-- The sent record of one message (markSent), returning the changed
-- message (messages.ChangedColumns) for its events.
WITH ?{sent_one}
  RETURNING o.status AS old_status, x.*),
?{sent_counters},
u AS (
  ?{sent_counters_update})
SELECT m.old_status, ?{message_columns} FROM m
