-- The routed expansion's first step (routed.go): the oldest outbox rows
-- (at most limit), deleted and returned oldest first.
WITH o AS (
  DELETE FROM ?schema.webhook_outbox
   WHERE id IN (SELECT id FROM ?schema.webhook_outbox ORDER BY id LIMIT ?limit)
  RETURNING *)
SELECT created_at, event_ids, event_types, event_keys, bodies, delivery_events, endpoint_ids
  FROM o ORDER BY id
