-- running → completed at now.
UPDATE ?schema.campaigns c SET status = 'completed', updated_at = ?now::timestamptz,
  completed_at = ?now::timestamptz
  WHERE c.id = ?id AND c.status = 'running' RETURNING ?{campaign_columns}
