-- The pool senders pool of the tenant in the pool's order, with their
-- daily limits (default_limit the organization's default,
-- messages.Counters.ReadLimits: the statement reads the tenant schema
-- alone), the 'accept' counter of the UTC day of now and the campaign
-- id's messages of each still queued from id low on, with the lowest of
-- their ids. low (marks.low) starts the read at the campaign's oldest
-- message that may still be queued (messages_campaign_idx), so that it
-- reads about the messages in flight, not every message of the campaign:
-- with the statistics of an earlier moment, the count of the campaign's
-- queued messages alone was planned as a sequential scan of the tenant's
-- messages, its cost growing with every message released.
SELECT s.id, s.status, coalesce(s.daily_limit_override, ?default_limit::int), coalesce(u.used, 0), coalesce(q.n, 0),
       coalesce(q.oldest, 0)
  FROM unnest(?pool::bigint[]) WITH ORDINALITY AS p(id, n)
  JOIN ?schema.sender_numbers s ON s.id = p.id
  LEFT JOIN ?schema.daily_usage u ON u.sender_number_id = s.id
       AND u.day = (?now::timestamptz AT TIME ZONE 'UTC')::date AND u.side = 'accept'
  LEFT JOIN (SELECT m.sender_number_id, count(*) AS n, min(m.id) AS oldest FROM ?schema.messages m
              WHERE m.campaign_id = ?id::bigint AND m.id >= ?low::bigint AND m.status = 'queued'
              GROUP BY m.sender_number_id) q
       ON q.sender_number_id = s.id
 ORDER BY p.n
