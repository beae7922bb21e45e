-- Each sender number of a tenant with its daily limit, its use today and
-- its scheduled messages, read through messages_status_idx (the scheduled
-- ones only), by id.
SELECT s.id, s.phone, s.status,
       coalesce(s.daily_limit_override, ?default_limit::int) AS daily_limit, coalesce(u.used, 0) AS used,
       coalesce(w.n, 0) AS scheduled
  FROM ?schema.sender_numbers s
  LEFT JOIN ?schema.daily_usage u ON u.sender_number_id = s.id AND u.day = ?today::date AND u.side = 'accept'
  LEFT JOIN (SELECT m.sender_number_id, count(*) AS n FROM ?schema.messages m
              WHERE m.status = 'scheduled' GROUP BY m.sender_number_id) w ON w.sender_number_id = s.id
 ORDER BY s.id
