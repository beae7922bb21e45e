-- Whether the schema (its name) is not a distributed schema yet.
SELECT NOT EXISTS (SELECT 1 FROM pg_dist_schema WHERE schemaid = ?name::regnamespace)
