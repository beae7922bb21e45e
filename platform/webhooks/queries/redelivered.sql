-- What a redelivery copies from the delivery it repeats: the endpoint and
-- the event (the same webhook-id and body).
SELECT endpoint_id, event_id, event_type, body, key
  FROM ?schema.webhook_deliveries
 WHERE id = ?id AND endpoint_id = ?endpoint_id
