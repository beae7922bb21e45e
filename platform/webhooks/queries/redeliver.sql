-- A redelivery: a new pending delivery of the event, due now, inserted by
-- VALUES (a statement Citus routes to the tenant's node, where an
-- INSERT ... SELECT is copied through the coordinator), returned as the
-- delivery log shows it.
INSERT INTO ?schema.webhook_deliveries AS d
       (endpoint_id, event_id, event_type, body, key, next_attempt_at, created_at, updated_at)
VALUES (?endpoint_id::bigint, ?event_id::text, ?event_type::text, ?body::text, ?key::text,
        ?now::timestamptz, ?now::timestamptz, ?now::timestamptz)
RETURNING d.id, d.event_id, d.event_type, d.state, d.attempts, d.last_status_code,
          coalesce(d.last_error, ''), d.latency_ms, d.next_attempt_at, d.created_at
