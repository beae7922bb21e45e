-- A token's membership: the role and the organization's schema.
SELECT m.role, o.schema_name
FROM central.memberships m JOIN central.organizations o ON o.id = m.organization_id
WHERE m.organization_id = ?org_id::bigint AND m.user_id = ?user_id::bigint
