c AS (
  SELECT d.sender_number_id FROM ?schema.daily_usage d JOIN ok ON d.sender_number_id = ok.id
   WHERE d.day = (?at::timestamptz AT TIME ZONE 'UTC')::date AND d.side = 'accept'),
u AS (
  UPDATE ?schema.daily_usage u SET used = u.used + 1, bound = ok.lim FROM ok
   WHERE u.sender_number_id = ok.id AND u.day = (?at::timestamptz AT TIME ZONE 'UTC')::date AND u.side = 'accept'
     AND ok.lim >= 1 AND u.used < ok.lim
  RETURNING u.sender_number_id)
