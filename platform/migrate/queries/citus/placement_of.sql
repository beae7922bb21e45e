-- One organization (org), whether or not it has a tenant schema, with its
-- schema's node (the fragment org_placement).
?{org_placement}
 WHERE o.id = ?org
