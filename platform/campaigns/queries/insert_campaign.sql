-- A new campaign (Create).
INSERT INTO ?schema.campaigns AS c
  (name, sender_number_ids, template_id, template_name, template_language, type, content, file_name,
   file_size, file_type, duration, send_at, reserve_percent, created_at, updated_at)
  VALUES (?name, ?sender_number_ids, ?template_id, ?template_name, ?template_language, ?type, ?content, ?file_name,
          ?file_size, ?file_type, ?duration, ?send_at, ?reserve_percent, ?now, ?now)
  RETURNING ?{campaign_columns}
