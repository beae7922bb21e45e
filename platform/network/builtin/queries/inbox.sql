-- The last messages (all when the limit is NULL) the account received,
-- newest first: the columns scanInbox reads (as read.sql and send.sql
-- return them).
SELECT m.id, m.conversation_id, f.phone, t.phone, m.type, m.content,
       coalesce(m.file_name, ''), coalesce(m.file_size, 0), coalesce(m.file_type, ''),
       coalesce(m.duration, 0), m.reference, m.created_at, coalesce(m.delivered_at, m.created_at),
       m.read_at
  FROM network.messages m
  JOIN network.accounts f ON f.id = m.from_account_id
  JOIN network.accounts t ON t.id = m.to_account_id
 WHERE m.to_account_id = ?account_id
 ORDER BY m.id DESC
 LIMIT ?limit
