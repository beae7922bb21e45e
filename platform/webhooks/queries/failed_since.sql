-- RedeliverFailed: the latest delivery to the endpoint of each event
-- created at or after since, where it failed, in the order of the
-- deliveries (what each redelivery copies).
SELECT endpoint_id, event_id, event_type, body, key
  FROM (SELECT DISTINCT ON (event_id) * FROM ?schema.webhook_deliveries
         WHERE endpoint_id = ?endpoint_id AND created_at >= ?since::timestamptz
         ORDER BY event_id, id DESC) o
 WHERE o.state = 'failed'
 ORDER BY o.id
