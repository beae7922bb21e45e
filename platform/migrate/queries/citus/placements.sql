-- Every organization with a tenant schema, by id, with its schema's node
-- (the fragment org_placement).
?{org_placement}
 WHERE o.schema_name IS NOT NULL
 ORDER BY o.id
