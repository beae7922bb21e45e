-- The conversation of the account pair (low < high), created at now if
-- there is none. No row when another call created it after this statement
-- began (the insert conflicts): run it again, its new snapshot sees that
-- conversation.
WITH existing AS (
  SELECT id FROM network.conversations WHERE low_account_id = ?low AND high_account_id = ?high),
created AS (
  INSERT INTO network.conversations (low_account_id, high_account_id, created_at)
  SELECT ?low, ?high, ?now WHERE NOT EXISTS (SELECT 1 FROM existing)
  ON CONFLICT (low_account_id, high_account_id) DO NOTHING
  RETURNING id)
SELECT id FROM existing UNION ALL SELECT id FROM created
