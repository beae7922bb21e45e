-- stage_many on Citus (Config.Routed): its rows as a multi-row VALUES
-- (sqlq's PgxRows writes this row once per draft), which Citus routes to
-- the tenant's node, where stage_many's SELECT from arrays would be
-- copied there in a two-phase commit (docs/scaling.md, §Two-phase commits).
INSERT INTO ?schema.messages (id, sender_number_id, to_phone, type, content, file_name, file_size, file_type,
       duration, client_reference, template_id, template_ref, campaign_id, status, created_at, updated_at)
VALUES (?id::bigint, ?sender::bigint, ?to_phone::text, ?type::text, ?content::text, ?file_name::text,
        ?file_size::bigint, ?file_type::text, ?duration::int, ?client_reference::text, ?template_id::bigint,
        ?template_ref::text, ?campaign_id::bigint, 'scheduled', ?at::timestamptz, ?at::timestamptz)
