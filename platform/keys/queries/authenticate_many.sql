-- Authenticate for a run of several (the fragment authenticate): prefix
-- and hash are arrays, numbered by generate_subscripts, which gives the
-- planner no estimate of their length, so the statement keeps one generic
-- plan per connection (unnest would have each run planned afresh).
WITH items AS (
  SELECT (?prefix::text[])[g] AS prefix, (?hash::bytea[])[g] AS hash, g::bigint AS ord
    FROM generate_subscripts(?prefix::text[], 1) AS g),
?{authenticate}
