-- draft → status (running or scheduled); started_at when it runs.
UPDATE ?schema.campaigns c SET status = ?status::text, updated_at = ?now::timestamptz,
  started_at = CASE WHEN ?status::text = 'running' THEN ?now::timestamptz END
  WHERE c.id = ?id AND c.status = 'draft' RETURNING ?{campaign_columns}
