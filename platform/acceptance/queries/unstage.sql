-- The staged messages of a tick whose release refused them.
DELETE FROM ?schema.messages WHERE id = ANY(?ids::bigint[]) AND status = 'scheduled'
