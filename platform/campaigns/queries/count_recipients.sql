-- Adds added to campaign id's total.
UPDATE ?schema.campaigns SET recipients = recipients + ?added, updated_at = ?now
  WHERE id = ?id RETURNING recipients
