-- Allow: for each key (keys, with its interval t and tolerance tau in
-- seconds and its number of events n), how many of its events take a
-- slot now (the allow_step fragment).
WITH pace_v AS (
  SELECT * FROM unnest(?keys::text[], ?t::float8[], ?tau::float8[], ?n::int[]) AS v(key, t, tau, n)),
?{allow_step}
SELECT key, from_s, to_s FROM pace_out
