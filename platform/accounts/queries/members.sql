-- One page of an organization's members, newest first, after the id
-- after (0: the first page).
SELECT u.id, u.name, u.email, m.role, u.created_at
FROM central.memberships m JOIN central.users u ON u.id = m.user_id
WHERE m.organization_id = ?org_id::bigint AND (?after::bigint = 0 OR u.id < ?after::bigint)
ORDER BY u.id DESC
LIMIT ?limit::integer
