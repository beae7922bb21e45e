-- Releases a schema's migration lock taken by lock.
SELECT pg_advisory_unlock(hashtextextended(?key, 0))
