-- A sent record's counters: c counts m's formerly queued messages per
-- sender and day, l locks their 'deliver' rows in sender and day order.
c AS (
  SELECT sender_number_id, (created_at AT TIME ZONE 'UTC')::date AS day,
         count(*) FILTER (WHERE status = 'sent') AS ns, count(*) FILTER (WHERE status = 'delivered') AS nd
    FROM m WHERE old_status = 'queued' GROUP BY 1, 2),
l AS (
  SELECT d.sender_number_id, d.day, c.ns, c.nd
    FROM ?schema.daily_usage d JOIN c USING (sender_number_id, day)
   WHERE d.side = 'deliver'
   ORDER BY d.sender_number_id, d.day FOR UPDATE OF d)
