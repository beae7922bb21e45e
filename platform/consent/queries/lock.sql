-- The opt-out lock of phone of the tenant schema named schema_name,
-- exclusively, for the transaction (lock.go): what every change of the
-- phone's opt-out takes first.
SELECT pg_advisory_xact_lock(hashtext(?schema_name::text), hashtext(?phone::text))
