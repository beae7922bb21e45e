-- Frees the orphaned jobs of one kind running for longer than after_us
-- (microseconds), recording reason as their attempt's error and counting
-- the rescue in the job's metadata like River's rescuer; returns their
-- ids. River's tables are in the schema river (migrate.RiverSchema).
UPDATE river.river_job SET
    state = CASE WHEN attempt >= max_attempts THEN 'discarded' ELSE 'available' END::river.river_job_state,
    finalized_at = CASE WHEN attempt >= max_attempts THEN now() END,
    scheduled_at = CASE WHEN attempt >= max_attempts THEN scheduled_at ELSE now() END,
    errors = array_append(errors, jsonb_build_object(
        'at', to_jsonb(now()), 'attempt', greatest(attempt, 0), 'error', ?reason::text, 'trace', '')),
    metadata = metadata || jsonb_build_object('river:rescue_count', coalesce(
        CASE WHEN jsonb_typeof(metadata -> 'river:rescue_count') = 'number'
             THEN (metadata ->> 'river:rescue_count')::int END, 0) + 1)
WHERE state = 'running' AND kind = ?kind::text AND attempted_at < now() - make_interval(secs => ?after_us::bigint / 1e6)
RETURNING id
