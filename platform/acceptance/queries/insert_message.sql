-- A message the acceptance statement (acceptVariant) counted, queued, in
-- the statement after it. Its id is drawn from the
-- table's sequence (on Citus by the coordinator, which then routes the
-- row to the tenant's node). A message without a template has NULL ones.
INSERT INTO ?schema.messages (sender_number_id, to_phone, recipient_user_id, type, content, file_name,
       file_size, file_type, duration, status, client_reference, created_at, updated_at, template_id, template_ref)
VALUES (?sender::bigint, ?to_phone::text, ?recipient_user_id::bigint, ?type::text, ?content::text,
        ?file_name::text, ?file_size::bigint, ?file_type::text, ?duration::bigint, 'queued',
        ?client_reference::text, ?at::timestamptz, ?at::timestamptz, ?template_id::bigint, ?template_ref::text)
RETURNING id
