-- The messages ids locked in id order, with their senders, blockers, other
-- jobs' claims (held) and claimants (jobs, by position in ids).
SELECT ?{delivery_columns}, (?{blocker}) AS blocker_id,
       (m.claimed_by IS NOT NULL AND m.claimed_by <> (?jobs::bigint[])[array_position(?ids::bigint[], m.id)]
        AND m.claimed_at > statement_timestamp() - make_interval(secs => ?lease::float8)) AS held,
       (?jobs::bigint[])[array_position(?ids::bigint[], m.id)] AS claimant
  FROM ?{delivery_from}
 WHERE m.id = ANY(?ids::bigint[]) ORDER BY m.id FOR UPDATE OF m
