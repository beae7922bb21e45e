-- Marks pending recipients ids of campaign id released at now, with
-- their messages messages and senders senders.
UPDATE ?schema.campaign_recipients r
   SET status = 'released', message_id = x.message_id, sender_number_id = x.sender, updated_at = ?now
  FROM unnest(?ids::bigint[], ?messages::bigint[], ?senders::bigint[]) AS x(id, message_id, sender)
 WHERE r.campaign_id = ?id::bigint AND r.id = x.id AND r.status = 'pending'
