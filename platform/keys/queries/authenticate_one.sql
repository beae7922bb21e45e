-- Authenticate for a run of one (the fragment authenticate): its prefix
-- and hash as scalars, what a process that is not busy runs. unnest over
-- arrays would let Postgres see each run's length and plan each run afresh
-- (a custom plan); this statement keeps one generic plan per connection.
WITH items AS (SELECT ?prefix::text AS prefix, ?hash::bytea AS hash, 1::bigint AS ord),
?{authenticate}
