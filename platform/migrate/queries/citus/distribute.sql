-- Makes the schema (its name) a distributed schema unless it is one
-- already: Citus moves its tables, functions and rows whole to one worker.
SELECT citus_schema_distribute(?name::regnamespace) WHERE NOT EXISTS (
    SELECT 1 FROM pg_dist_schema WHERE schemaid = ?name::regnamespace)
