-- One member of an organization.
SELECT u.id, u.name, u.email, m.role, u.created_at
FROM central.memberships m JOIN central.users u ON u.id = m.user_id
WHERE m.organization_id = ?org_id::bigint AND m.user_id = ?user_id::bigint
