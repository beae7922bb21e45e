-- The reads of attempts (batches.go): each delivery of ids, numbered n
-- from 1 in the order given, with its event and endpoint, and the
-- earliest pending delivery of its key to its endpoint before it that was
-- created after its stale_before (the one it waits for).
SELECT q.n, d.endpoint_id, d.key, d.state, d.created_at, d.event_id, d.body,
       e.url, e.enabled, e.secret, coalesce(e.previous_secret, ''), e.previous_secret_until,
       b.id, b.next_attempt_at
  FROM unnest(?ids::bigint[], ?stale_before::timestamptz[]) WITH ORDINALITY AS q(id, stale_before, n)
  JOIN ?schema.webhook_deliveries d ON d.id = q.id
  JOIN ?schema.webhook_endpoints e ON e.id = d.endpoint_id
  LEFT JOIN LATERAL (
       SELECT p.id, p.next_attempt_at FROM ?schema.webhook_deliveries p
        WHERE p.endpoint_id = d.endpoint_id AND p.key = d.key AND p.state = 'pending'
          AND p.id < d.id AND p.created_at > q.stale_before
        ORDER BY p.id LIMIT 1) b ON true
