?{accept_opt_out},
ok AS (
  SELECT id, lim AS lim FROM s, o WHERE status = 'active' AND (?phone::text = '' OR phone = ?phone::text) AND lim >= 1
     AND NOT o.opted_out AND s.window_open),
?{accept_counter}
SELECT s.id AS sender_id, s.phone, s.status, s.lim, EXISTS (SELECT 1 FROM u) AS counted, o.opted_out, s.window_open,
       EXISTS (SELECT 1 FROM ok) AND NOT EXISTS (SELECT 1 FROM c) AS no_counter
  FROM (SELECT 1) one LEFT JOIN s ON true LEFT JOIN o ON true
