-- A campaign tick's checked drafts stored as scheduled messages under
-- their ids (ReleaseMany), one per element of the arrays, on one server.
INSERT INTO ?schema.messages (id, sender_number_id, to_phone, type, content, file_name, file_size, file_type,
       duration, client_reference, template_id, template_ref, campaign_id, status, created_at, updated_at)
SELECT x.id, x.sender, x.phone, x.type, x.content, x.file_name, x.file_size, x.file_type, x.duration,
       x.ref, x.template_id, x.template_ref, x.campaign_id, 'scheduled', x.at, x.at
  FROM unnest(?ids::bigint[], ?senders::bigint[], ?phones::text[], ?types::text[], ?contents::text[],
              ?file_names::text[], ?file_sizes::bigint[], ?file_types::text[], ?durations::int[],
              ?refs::text[], ?template_ids::bigint[], ?template_refs::text[], ?campaign_ids::bigint[],
              ?at::timestamptz[])
       AS x(id, sender, phone, type, content, file_name, file_size, file_type, duration, ref, template_id,
            template_ref, campaign_id, at)
