-- The one-statement expansion on one server (outbox.go): it deletes the
-- oldest outbox rows (at most limit), inserts their deliveries (those of
-- endpoints that still exist) due and updated at now, in the order of
-- their rows and their places in them, and returns how many rows it
-- deleted and the deliveries' ids, endpoints and creation times in id
-- order. On Citus its INSERT step reaches every worker (routed.go).
WITH o AS (
  DELETE FROM ?schema.webhook_outbox
   WHERE id IN (SELECT id FROM ?schema.webhook_outbox ORDER BY id LIMIT ?limit)
  RETURNING *),
d AS (
  INSERT INTO ?schema.webhook_deliveries
         (endpoint_id, event_id, event_type, body, key, next_attempt_at, created_at, updated_at)
  SELECT e.id, o.event_ids[p.place], o.event_types[p.place], o.bodies[p.place], o.event_keys[p.place],
         ?now::timestamptz, o.created_at, ?now::timestamptz
    FROM o CROSS JOIN LATERAL unnest(o.delivery_events, o.endpoint_ids) WITH ORDINALITY AS p(place, endpoint_id, n)
    JOIN ?schema.webhook_endpoints e ON e.id = p.endpoint_id
   ORDER BY o.id, p.n
  RETURNING id, endpoint_id, created_at)
SELECT (SELECT count(*) FROM o)::int,
       coalesce((SELECT array_agg(id ORDER BY id) FROM d), '{}'),
       coalesce((SELECT array_agg(endpoint_id ORDER BY id) FROM d), '{}'),
       coalesce((SELECT array_agg(created_at ORDER BY id) FROM d), '{}')
