-- Stores a delivery in one statement (one implicit transaction, one
-- commit): it finds the conversation of the account pair (low < high),
-- creating it if needed, and inserts the message under its unique
-- reference, delivered at now (the network stores it in the recipient's
-- inbox). It returns the conversation and the new message's id and time;
-- the id is NULL when the reference exists already (nothing is inserted,
-- and no conversation is created for it), and the conversation too when
-- another call created it after this statement began (it conflicts on the
-- pair's unique index and inserts nothing: run the statement again).
WITH existing AS (
  SELECT id FROM network.conversations WHERE low_account_id = ?low AND high_account_id = ?high),
created AS (
  INSERT INTO network.conversations (low_account_id, high_account_id, created_at)
  SELECT ?low, ?high, ?now
   WHERE NOT EXISTS (SELECT 1 FROM existing)
     AND NOT EXISTS (SELECT 1 FROM network.messages WHERE reference = ?reference)
  ON CONFLICT (low_account_id, high_account_id) DO NOTHING
  RETURNING id),
conv AS (SELECT id FROM existing UNION ALL SELECT id FROM created),
ins AS (
  INSERT INTO network.messages
         (conversation_id, from_account_id, to_account_id, type, content,
          file_name, file_size, file_type, duration, reference, created_at, delivered_at)
  SELECT id, ?from_id, ?to_id, ?type, ?content, ?file_name, ?file_size, ?file_type, ?duration, ?reference, ?now, ?now
    FROM conv
  ON CONFLICT (reference) DO NOTHING
  RETURNING id, created_at)
SELECT (SELECT id FROM conv LIMIT 1), ins.id, ins.created_at
  FROM (SELECT 1) one LEFT JOIN ins ON true
