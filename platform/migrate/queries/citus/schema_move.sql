-- Moves the schema (its name) whole to the worker at host and port, by
-- logical replication when every table has a replica identity.
SELECT citus_schema_move(?name::regnamespace, ?host, ?port, shard_transfer_mode => 'auto')
