-- On Citus: SET LOCAL citus.enable_schema_based_sharding TO off, as a
-- statement that prepares, so that the schemas the transaction creates
-- are regular schemas of the coordinator.
SELECT set_config('citus.enable_schema_based_sharding', 'off', true)
