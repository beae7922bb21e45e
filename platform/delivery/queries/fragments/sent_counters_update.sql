-- Raises the counters sent_counters locked (l).
UPDATE ?schema.daily_usage u SET sent = u.sent + l.ns, delivered = u.delivered + l.nd FROM l
 WHERE u.sender_number_id = l.sender_number_id AND u.day = l.day AND u.side = 'deliver'
