-- The released recipients' messages of campaigns ids by status
-- (messages_campaign_status_idx).
SELECT m.campaign_id, m.status, count(*)
  FROM ?schema.messages m WHERE m.campaign_id = ANY(?ids::bigint[])
  GROUP BY m.campaign_id, m.status
