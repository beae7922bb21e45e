-- draft | scheduled | running | paused → canceled.
UPDATE ?schema.campaigns c SET status = 'canceled', updated_at = ?now::timestamptz, canceled_at = ?now::timestamptz
  WHERE c.id = ?id AND c.status IN ('draft', 'scheduled', 'running', 'paused') RETURNING ?{campaign_columns}
