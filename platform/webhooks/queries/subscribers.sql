-- Emit: the enabled endpoints subscribed to any of the events' types, in
-- id order (the order of their deliveries).
SELECT id, events FROM ?schema.webhook_endpoints
 WHERE enabled AND events && ?types::text[]
 ORDER BY id
