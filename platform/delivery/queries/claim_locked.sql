-- claimLocked's last step: each sender's day's dispatched counter set to
-- what it decided (senders, days, counts), and the messages it claimed
-- (ids, each by its job of jobs) stamped dispatched and claimed.
WITH u AS (
  UPDATE ?schema.daily_usage d SET dispatched = v.n
    FROM unnest(?senders::bigint[], ?days::text[], ?counts::int[]) v(sender, day, n)
   WHERE d.sender_number_id = v.sender AND d.day = v.day::date AND d.side = 'deliver')
UPDATE ?schema.messages x SET dispatched_at = coalesce(x.dispatched_at, ?now::timestamptz), claimed_by = c.job,
       claimed_at = statement_timestamp(), updated_at = ?now::timestamptz
  FROM unnest(?ids::bigint[], ?jobs::bigint[]) c(id, job) WHERE x.id = c.id
