-- A number's directory entry, written only over an older one: its
-- updated_at increases at every change, so an entry applied twice, or
-- after a later one, changes nothing.
INSERT INTO central.sender_number_directory AS d (organization_id, sender_id, phone, status, updated_at)
VALUES (?org_id::bigint, ?sender_id::bigint, ?phone::text, ?status::text, ?updated_at::timestamptz)
    ON CONFLICT (organization_id, sender_id) DO UPDATE
   SET phone = excluded.phone, status = excluded.status, updated_at = excluded.updated_at
 WHERE d.updated_at < excluded.updated_at
