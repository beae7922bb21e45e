-- Takes a schema's migration lock for the transaction (TenantTx).
SELECT pg_advisory_xact_lock(hashtextextended(?key, 0))
