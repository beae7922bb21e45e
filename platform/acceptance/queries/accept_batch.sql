-- Several messages' acceptance at once (acceptMany, statements.go).
WITH ?{accept_batch_input},
s AS (
  SELECT i.ord, i.day, i.sender_phone, s.id, s.phone, s.status,
         coalesce(s.daily_limit_override, i.org_limit) AS lim,
         EXISTS (SELECT 1 FROM ?schema.opt_outs x WHERE x.phone = i.to_phone) AS opted_out,
         true AS window_open
    FROM i
    JOIN ?schema.sender_numbers s ON s.id = CASE WHEN i.sender_id > 0 THEN i.sender_id
         ELSE (SELECT x.id FROM ?schema.sender_numbers x WHERE x.phone = i.sender_phone) END),
?{accept_batch_reserve}
