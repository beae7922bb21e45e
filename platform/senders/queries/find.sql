-- The organizations where a phone is registered, by organization id; only
-- one organization's when org_id is not 0.
SELECT d.organization_id, o.schema_name, d.sender_id, d.phone, d.status
  FROM central.sender_number_directory d
  JOIN central.organizations o ON o.id = d.organization_id
 WHERE d.phone = ?phone::text AND o.schema_name IS NOT NULL
   AND (?org_id::bigint = 0 OR d.organization_id = ?org_id::bigint)
 ORDER BY d.organization_id
