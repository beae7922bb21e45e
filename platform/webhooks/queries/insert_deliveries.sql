-- Deliveries inserted by one multi-row VALUES, which Citus routes to the
-- tenant's node (the routed expansion, RedeliverFailed): the file has one
-- row, written once per delivery by sqlq's PgxRows, and the ids are drawn
-- in the rows' order.
INSERT INTO ?schema.webhook_deliveries
       (endpoint_id, event_id, event_type, body, key, next_attempt_at, updated_at, created_at)
VALUES (?endpoint_id::bigint, ?event_id::text, ?event_type::text, ?body::text, ?key::text,
        ?now::timestamptz, ?now::timestamptz, ?created_at::timestamptz)
RETURNING id, endpoint_id, created_at
