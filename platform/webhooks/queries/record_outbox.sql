-- Emit: one transaction's events and the endpoints subscribed to each, as
-- one row of the webhook outbox (outbox.go).
INSERT INTO ?schema.webhook_outbox
       (created_at, event_ids, event_types, event_keys, bodies, delivery_events, endpoint_ids)
VALUES (?created_at, ?event_ids, ?event_types, ?event_keys, ?bodies, ?delivery_events, ?endpoint_ids)
