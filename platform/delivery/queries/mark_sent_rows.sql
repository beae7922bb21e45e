-- The sent record of messages ids (markSent), returning the changed
-- messages (messages.ChangedColumns) for their events.
WITH ?{sent_many}
  RETURNING o.status AS old_status, x.*),
?{sent_counters},
u AS (
  ?{sent_counters_update})
SELECT m.old_status, ?{message_columns} FROM m
