-- Makes the scheduled and retryable jobs of one kind that are due
-- available, as River's scheduler does for jobs without a unique key.
UPDATE river.river_job SET state = 'available'
WHERE state IN ('scheduled', 'retryable') AND kind = ?kind::text AND scheduled_at <= now()
  AND unique_key IS NULL
