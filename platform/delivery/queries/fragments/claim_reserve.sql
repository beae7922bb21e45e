-- The daily-limit reservation (messages.ReserveSQL) on the 'deliver'
-- counters: c locks want's rows in sender and day order, u raises them
-- all or none, and none while c misses one.
c AS (
  SELECT d.sender_number_id, d.day FROM ?schema.daily_usage d
    JOIN want w ON d.sender_number_id = w.sender_number_id AND d.day = w.day
   WHERE d.side = 'deliver'
   ORDER BY d.sender_number_id, d.day FOR UPDATE OF d),
u AS (
  UPDATE ?schema.daily_usage d SET dispatched = d.dispatched + w.n, bound = w.lim
    FROM want w
   WHERE d.sender_number_id = w.sender_number_id AND d.day = w.day AND d.side = 'deliver'
     AND d.dispatched + w.n <= w.lim
     AND (SELECT count(*) FROM c) = (SELECT count(*) FROM want)
  RETURNING d.sender_number_id, d.day)
