-- The sent record of one message (markSent), without its rows.
WITH ?{sent_one}
  RETURNING o.status AS old_status, x.sender_number_id, x.created_at, x.status),
?{sent_counters}
?{sent_counters_update}
