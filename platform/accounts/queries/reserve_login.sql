-- One attempt on the account's and the address's login counters, in one
-- atomic upsert; a counter whose window started at or before expired
-- starts a new window at now.
INSERT INTO central.login_throttle AS t (key, attempts, window_start)
VALUES (?account::text, 1, ?now::timestamptz), (?address::text, 1, ?now::timestamptz)
ON CONFLICT (key) DO UPDATE SET
    attempts     = CASE WHEN t.window_start <= ?expired::timestamptz THEN 1 ELSE t.attempts + 1 END,
    window_start = CASE WHEN t.window_start <= ?expired::timestamptz THEN ?now::timestamptz ELSE t.window_start END
RETURNING key, attempts, window_start
