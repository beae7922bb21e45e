ok AS (
  SELECT ord, day, id, lim FROM s
   WHERE status = 'active' AND (sender_phone = '' OR phone = sender_phone) AND lim >= 1
     AND NOT opted_out AND window_open),
want AS (
  SELECT id, day, min(lim) AS lim, count(*) AS n FROM ok GROUP BY id, day),
c AS (
  SELECT d.sender_number_id, d.day FROM ?schema.daily_usage d
    JOIN want w ON d.sender_number_id = w.id AND d.day = w.day
   WHERE d.side = 'accept'
   ORDER BY d.sender_number_id, d.day FOR UPDATE OF d),
u AS (
  UPDATE ?schema.daily_usage d SET used = d.used + w.n, bound = w.lim
    FROM want w
   WHERE d.sender_number_id = w.id AND d.day = w.day AND d.side = 'accept'
     AND d.used + w.n <= w.lim
     AND (SELECT count(*) FROM c) = (SELECT count(*) FROM want)
  RETURNING d.sender_number_id, d.day)
SELECT s.ord, s.id, u.sender_number_id IS NOT NULL AS accepted,
       ok.ord IS NOT NULL AND c.sender_number_id IS NULL AS missing
  FROM s LEFT JOIN ok ON ok.ord = s.ord
  LEFT JOIN u ON u.sender_number_id = ok.id AND u.day = ok.day
  LEFT JOIN c ON c.sender_number_id = ok.id AND c.day = ok.day
