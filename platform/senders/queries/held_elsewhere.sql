-- How many claims on the phone another number holds (zero or one).
SELECT count(*) FROM central.active_sender_phones
 WHERE phone = ?phone::text AND NOT (organization_id = ?org_id::bigint AND sender_id = ?sender_id::bigint)
