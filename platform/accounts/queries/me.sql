-- The signed-in user, their role and their organization.
SELECT u.id AS user_id, u.name AS user_name, u.email, u.created_at AS user_created_at, mb.role,
       o.id AS org_id, o.name AS org_name, o.subscription_status, o.default_daily_limit,
       o.created_at AS org_created_at
FROM central.memberships mb
JOIN central.users u ON u.id = mb.user_id
JOIN central.organizations o ON o.id = mb.organization_id
WHERE mb.organization_id = ?org_id::bigint AND mb.user_id = ?user_id::bigint
