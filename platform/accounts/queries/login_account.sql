-- The account of a login: its first membership (oldest, then lowest
-- organization id).
SELECT u.id AS user_id, u.password_hash, m.organization_id, m.role
FROM central.users u JOIN central.memberships m ON m.user_id = u.id
WHERE lower(u.email) = ?email::text
ORDER BY m.created_at, m.organization_id
LIMIT 1
