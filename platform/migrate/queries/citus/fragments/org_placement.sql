-- Each organization's id, schema name, whether its schema is distributed,
-- and its schema's node: the node of the group holding the placements of
-- the schema's colocated shards (one group: a distributed schema lives
-- whole on one node). Citus's metadata tables, not citus_shards, which
-- asks every worker for shard sizes. The columns scanPlacement scans;
-- placements.sql and placement_of.sql choose the organizations.
SELECT o.id, o.schema_name, d.schemaid IS NOT NULL,
       (SELECT min(n.nodename || ':' || n.nodeport) FROM pg_dist_partition p
          JOIN pg_dist_shard s ON s.logicalrelid = p.logicalrelid
          JOIN pg_dist_placement pl ON pl.shardid = s.shardid
          JOIN pg_dist_node n ON n.groupid = pl.groupid AND n.noderole = 'primary'
         WHERE p.colocationid = d.colocationid)
  FROM central.organizations o
  LEFT JOIN pg_dist_schema d ON d.schemaid = to_regnamespace(o.schema_name)
