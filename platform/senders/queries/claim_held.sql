-- Whether the organization's number holds its phone's claim (checked under
-- the tenant row's lock by an activation).
SELECT EXISTS (SELECT FROM central.active_sender_phones
                WHERE phone = ?phone::text AND organization_id = ?org_id::bigint AND sender_id = ?sender_id::bigint)
