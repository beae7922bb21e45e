-- Drain's events: the oldest not processed, locked so that concurrent
-- Drains skip them.
SELECT id, kind, payload FROM network.events
 WHERE processed_at IS NULL
 ORDER BY id
 LIMIT ?limit
   FOR UPDATE SKIP LOCKED
