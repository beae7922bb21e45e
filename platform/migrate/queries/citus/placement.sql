-- The node (host:port) holding the schema (its name), NULL while it is a
-- regular schema of the coordinator.
SELECT (SELECT min(nodename || ':' || nodeport) FROM citus_shards
         WHERE colocation_id = (SELECT colocationid FROM pg_dist_schema WHERE schemaid = ?name::regnamespace))
