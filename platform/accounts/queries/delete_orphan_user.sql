-- An account goes with its last membership.
DELETE FROM central.users u WHERE u.id = ?user_id::bigint
AND NOT EXISTS (SELECT 1 FROM central.memberships m WHERE m.user_id = u.id)
