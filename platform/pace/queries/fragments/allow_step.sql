-- The decision of Allow as steps of a WITH clause (pace.AllowStep). It
-- reads pace_v(key text, t float8, tau float8, n int), each key with its
-- interval T and tolerance tau in seconds and its number of events, which
-- the statement defines before it, and ends with pace_out(key, from_s,
-- to_s), what Decide takes. A missing row is a full bucket; the upsert
-- decides under each row's lock, rows in key order (so concurrent
-- statements cannot deadlock), how many of a key's events fit before
-- max(tat, now) + k*T passes now + tau (at most all of them), and returns
-- where the key's slots started (prev, the tat it found; none for a new
-- row: now) and where they end (the new tat), in seconds from now.
pace_up AS (
  INSERT INTO central.pace AS p (key, tat)
  SELECT key, statement_timestamp() + least(n, floor(tau / t + 1e-9)) * t * interval '1 second'
    FROM pace_v ORDER BY key
  ON CONFLICT (key) DO UPDATE
     SET prev = p.tat,
         tat = greatest(p.tat, statement_timestamp()) + (
               SELECT least(v.n, greatest(floor((v.tau - extract(epoch FROM
                      greatest(p.tat, statement_timestamp()) - statement_timestamp())) / v.t + 1e-9), 0)) * v.t
                 FROM pace_v v WHERE v.key = excluded.key) * interval '1 second'
  RETURNING key, prev, tat),
pace_out AS (
  SELECT key, greatest(extract(epoch FROM prev - statement_timestamp()), 0)::float8 AS from_s,
         extract(epoch FROM tat - statement_timestamp())::float8 AS to_s
    FROM pace_up)
