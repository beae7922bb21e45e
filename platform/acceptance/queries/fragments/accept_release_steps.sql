?{accept_opt_out},
ok AS (
  SELECT id, lim - ceil(lim * ?reserve::int / 100.0)::int AS lim FROM s, o
   WHERE status = 'active' AND (?phone::text = '' OR phone = ?phone::text) AND lim >= 1
     AND NOT o.opted_out AND s.window_open AND EXISTS (SELECT 1 FROM r)),
?{accept_counter},
m AS (
  UPDATE ?schema.messages x
     SET ?{accept_release_set}
    FROM u
   WHERE x.id = ?id::bigint AND x.sender_number_id = u.sender_number_id AND x.status = 'scheduled'
  RETURNING x.id AS message_id)
SELECT s.id AS sender_id, s.phone, s.status, s.lim, EXISTS (SELECT 1 FROM m) AS counted, o.opted_out, s.window_open,
       EXISTS (SELECT 1 FROM ok) AND NOT EXISTS (SELECT 1 FROM c) AS no_counter,
       EXISTS (SELECT 1 FROM r) AS scheduled
  FROM (SELECT 1) one LEFT JOIN s ON true LEFT JOIN o ON true
