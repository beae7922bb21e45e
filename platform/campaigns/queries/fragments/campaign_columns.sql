-- A campaign's columns in the alias c, in the order scanCampaign reads
-- them.
c.id, c.name, c.status, c.sender_number_ids, c.template_id, c.template_name, c.template_language,
c.type, coalesce(c.content, ''), c.file_name, c.file_size, c.file_type, c.duration, c.send_at,
c.reserve_percent, c.recipients, c.created_at, c.updated_at, c.started_at, c.paused_at, c.completed_at,
c.canceled_at, c.release_gen
