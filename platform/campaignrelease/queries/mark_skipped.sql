-- Marks pending recipients ids of campaign id skipped at now, with their
-- error codes codes and the senders senders they were checked with.
UPDATE ?schema.campaign_recipients r
   SET status = 'skipped', error_code = x.code, sender_number_id = x.sender, updated_at = ?now
  FROM unnest(?ids::bigint[], ?codes::text[], ?senders::bigint[]) AS x(id, code, sender)
 WHERE r.campaign_id = ?id::bigint AND r.id = x.id AND r.status = 'pending'
