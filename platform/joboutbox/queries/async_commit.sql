-- A move's delete commits without waiting for its WAL flush: SET LOCAL
-- synchronous_commit = off, as a statement that prepares.
SELECT set_config('synchronous_commit', 'off', true)
