-- paused → running, or scheduled while send_at is ahead of now;
-- started_at the first time it runs.
UPDATE ?schema.campaigns c
  SET status = CASE WHEN c.send_at > ?now::timestamptz THEN 'scheduled' ELSE 'running' END,
      updated_at = ?now::timestamptz,
      started_at = CASE WHEN c.started_at IS NULL AND c.send_at > ?now::timestamptz THEN NULL
                        ELSE coalesce(c.started_at, ?now::timestamptz) END
  WHERE c.id = ?id AND c.status = 'paused' RETURNING ?{campaign_columns}
