-- A canceled campaign's pending recipients are skipped.
UPDATE ?schema.campaign_recipients SET status = 'skipped', error_code = ?code::text, updated_at = ?now::timestamptz
  WHERE campaign_id = ?id AND status = 'pending'
