-- Several messages' acceptance at once, with the service window (acceptMany, statements.go).
WITH ?{accept_batch_input},
s AS (
  SELECT i.ord, i.day, i.sender_phone, s.id, s.phone, s.status,
         coalesce(s.daily_limit_override, i.org_limit) AS lim,
         EXISTS (SELECT 1 FROM ?schema.opt_outs x WHERE x.phone = i.to_phone) AS opted_out,
         (i.type = 'template' OR EXISTS (SELECT 1 FROM ?schema.last_inbound l
           WHERE l.sender_number_id = s.id AND l.phone = i.to_phone
             AND l.at > i.created_at - make_interval(secs => ?window_secs::float8))) AS window_open
    FROM i
    JOIN ?schema.sender_numbers s ON s.id = CASE WHEN i.sender_id > 0 THEN i.sender_id
         ELSE (SELECT x.id FROM ?schema.sender_numbers x WHERE x.phone = i.sender_phone) END),
?{accept_batch_reserve}
