-- The successes of attempts (batches.go): each delivery of ids still
-- pending succeeded with its status and latency at its time, and the
-- failure streaks of their endpoints end.
WITH u AS (
  SELECT * FROM unnest(?ids::bigint[], ?statuses::integer[], ?latencies::integer[], ?ats::timestamptz[])
           AS u(id, status, latency_ms, at)),
d AS (
  UPDATE ?schema.webhook_deliveries d
     SET state = 'succeeded', attempts = d.attempts + 1, last_status_code = u.status, last_error = NULL,
         latency_ms = u.latency_ms, next_attempt_at = NULL, updated_at = u.at
    FROM u
   WHERE d.id = u.id AND d.state = 'pending'
  RETURNING d.endpoint_id)
UPDATE ?schema.webhook_endpoints SET failing_since = NULL
 WHERE id IN (SELECT endpoint_id FROM d) AND failing_since IS NOT NULL
