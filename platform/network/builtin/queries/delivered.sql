-- The message stored under a reference, with its sender's and recipient's
-- phones.
SELECT m.id, m.conversation_id, m.to_account_id, m.created_at, f.phone, t.phone
  FROM network.messages m
  JOIN network.accounts f ON f.id = m.from_account_id
  JOIN network.accounts t ON t.id = m.to_account_id
 WHERE m.reference = ?reference
