s AS (
  SELECT s.id, s.phone, s.status, coalesce(s.daily_limit_override, ?limit::int) AS lim,
         ?{accept_window_open} AS window_open
    FROM ?schema.sender_numbers s
   WHERE s.phone = ?phone::text)
