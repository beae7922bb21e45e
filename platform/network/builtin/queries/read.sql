-- Marks read (at now) the unread messages of the account recipient_id, from
-- the account sender_id only when it is not NULL, and writes a read receipt
-- (kind receipt_kind, status read_status) to the outbox for each, in one
-- statement (one transaction). It returns the messages read, the columns
-- scanInbox reads (as inbox.sql), in delivery order.
--
-- A message two Reads race for is read by one: the second waits for the
-- first's row lock, then finds read_at set and skips it.
WITH r AS (
  UPDATE network.messages
     SET read_at = ?now
   WHERE to_account_id = ?recipient_id AND (?sender_id::bigint IS NULL OR from_account_id = ?sender_id)
     AND read_at IS NULL
  RETURNING *),
ev AS (
  INSERT INTO network.events (kind, payload, created_at)
  SELECT ?receipt_kind::text, jsonb_build_object('reference', r.reference, 'status', ?read_status::text,
                                                 'at', r.read_at), ?now
    FROM r ORDER BY r.id)
SELECT m.id, m.conversation_id, f.phone, t.phone, m.type, m.content,
       coalesce(m.file_name, ''), coalesce(m.file_size, 0), coalesce(m.file_type, ''),
       coalesce(m.duration, 0), m.reference, m.created_at, coalesce(m.delivered_at, m.created_at),
       m.read_at
  FROM r m
  JOIN network.accounts f ON f.id = m.from_account_id
  JOIN network.accounts t ON t.id = m.to_account_id
 ORDER BY m.id
