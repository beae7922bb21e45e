-- placements.sql for one organization (org), whether or not it has a
-- tenant schema.
SELECT o.id, o.schema_name, d.schemaid IS NOT NULL,
       (SELECT min(n.nodename || ':' || n.nodeport) FROM pg_dist_partition p
          JOIN pg_dist_shard s ON s.logicalrelid = p.logicalrelid
          JOIN pg_dist_placement pl ON pl.shardid = s.shardid
          JOIN pg_dist_node n ON n.groupid = pl.groupid AND n.noderole = 'primary'
         WHERE p.colocationid = d.colocationid)
  FROM central.organizations o
  LEFT JOIN pg_dist_schema d ON d.schemaid = to_regnamespace(o.schema_name)
 WHERE o.id = ?org
