-- A scheduled send, status scheduled, counted against nothing: its release
-- job is inserted in the same transaction (schedule). It returns the
-- message's id.
INSERT INTO ?schema.messages (sender_number_id, to_phone, type, content, file_name, file_size, file_type,
       duration, client_reference, template_id, template_ref, send_at, status, created_at, updated_at)
VALUES (?sender::bigint, ?to_phone::text, ?type::text, ?content::text, ?file_name::text, ?file_size::bigint,
        ?file_type::text, ?duration::bigint, ?client_reference::text, ?template_id::bigint,
        ?template_ref::text, ?send_at::timestamptz, 'scheduled', ?at::timestamptz, ?at::timestamptz)
RETURNING id
