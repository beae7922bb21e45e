-- Locks the recipients ids of campaign id that are still pending and
-- returns their ids.
SELECT id FROM ?schema.campaign_recipients
 WHERE campaign_id = ?id::bigint AND id = ANY(?ids::bigint[]) AND status = 'pending' ORDER BY id FOR UPDATE
