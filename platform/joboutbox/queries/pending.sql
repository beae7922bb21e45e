-- Whether the tenant's outbox holds a row (the sweep).
SELECT EXISTS (SELECT FROM ?schema.job_outbox)
