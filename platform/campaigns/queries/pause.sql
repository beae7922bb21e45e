-- running | scheduled → paused.
UPDATE ?schema.campaigns c SET status = 'paused', updated_at = ?now::timestamptz, paused_at = ?now::timestamptz
  WHERE c.id = ?id AND c.status IN ('running', 'scheduled') RETURNING ?{campaign_columns}
