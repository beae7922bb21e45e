-- The group of the active primary node at host and port (NULL when there
-- is none; 0 is the coordinator's), and the cluster's active workers.
SELECT (SELECT groupid FROM pg_dist_node
         WHERE nodename = ?host AND nodeport = ?port AND noderole = 'primary' AND isactive),
       coalesce((SELECT string_agg(nodename || ':' || nodeport, ', ' ORDER BY nodeid) FROM pg_dist_node
                  WHERE groupid <> 0 AND noderole = 'primary' AND isactive), '')
