-- An entry of another number with the same phone in the organization is
-- stale (a tenant's phones are unique): it goes before the number's entry
-- is written.
DELETE FROM central.sender_number_directory
 WHERE organization_id = ?org_id::bigint AND phone = ?phone::text AND sender_id <> ?sender_id::bigint
