-- Takes a schema's migration lock for the session (withLock).
SELECT pg_advisory_lock(hashtextextended(?key, 0))
