-- A page of campaign id's recipients, newest first, after id after (0:
-- the first page), with their public status: pending, skipped, or their
-- message's; status filters by it ('' any).
SELECT r.id, r.phone, CASE WHEN r.status = 'released' THEN coalesce(m.status, 'queued') ELSE r.status END,
  r.message_id, r.sender_number_id, r.error_code, r.client_reference
  FROM ?schema.campaign_recipients r LEFT JOIN ?schema.messages m ON r.status = 'released' AND m.id = r.message_id
  WHERE r.campaign_id = ?id AND (?after::bigint = 0 OR r.id < ?after)
    AND (?status::text = '' OR r.status = ?status AND ?status IN ('pending', 'skipped')
         OR r.status = 'released' AND m.status = ?status)
  ORDER BY r.id DESC LIMIT ?limit
