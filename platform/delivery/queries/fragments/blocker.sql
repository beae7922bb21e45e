-- The message that message m waits for, if any (statements.go, blocker).
SELECT e.id FROM ?schema.messages e
 WHERE e.sender_number_id = m.sender_number_id AND e.to_phone = m.to_phone
   AND e.status = 'queued' AND e.id < m.id
   AND (e.failing_since IS NULL OR e.failing_since > ?since::timestamptz)
 ORDER BY e.id DESC LIMIT 1
