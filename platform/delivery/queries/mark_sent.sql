-- The sent record of messages ids (markSent), without their rows.
WITH ?{sent_many}
  RETURNING o.status AS old_status, x.sender_number_id, x.created_at, x.status),
?{sent_counters}
?{sent_counters_update}
