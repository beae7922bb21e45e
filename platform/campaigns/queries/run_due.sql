-- scheduled → running once send_at has come (now).
UPDATE ?schema.campaigns c SET status = 'running', updated_at = ?now::timestamptz,
  started_at = coalesce(c.started_at, ?now::timestamptz)
  WHERE c.id = ?id AND c.status = 'scheduled' AND c.send_at <= ?now::timestamptz RETURNING ?{campaign_columns}
