-- Take: slots for the items (keys, tickets, the interval T and the
-- tolerance tau of each, in seconds; one limit per key), each item's
-- ordinal with the seconds until its slot is due (zero: now). Its steps:
--   prior: a slot an item's ticket reserved before; the item gets it
--     instead of a new one (and it is forgotten once due: used);
--   fresh: the other items, numbered per key in arrival order (idx);
--   up: each key's tat moves to max(tat, now) + n*T for its n fresh items
--     (a missing row is a full bucket), under the row's lock, rows in key
--     order (so concurrent batches cannot deadlock), prev keeping where the
--     slots start;
--   due: the item numbered idx is due at max(prev, now) + idx*T - tau;
--   keep: a slot due in the future is kept under its item's ticket.
WITH items AS (
  SELECT * FROM unnest(?keys::text[], ?tickets::text[], ?t::float8[], ?tau::float8[]) WITH ORDINALITY AS i(key, ticket, t, tau, ord)),
prior AS (
  SELECT ticket, due FROM central.pace_tickets WHERE ticket = ANY(?tickets::text[]) AND ticket <> ''),
used AS (
  DELETE FROM central.pace_tickets
   WHERE ticket IN (SELECT ticket FROM prior) AND due <= statement_timestamp()),
fresh AS (
  SELECT i.*, row_number() OVER (PARTITION BY i.key ORDER BY i.ord) AS idx FROM items i
   WHERE NOT EXISTS (SELECT FROM prior p WHERE p.ticket = i.ticket)),
v AS (
  SELECT key, count(*) * min(t) AS span FROM fresh GROUP BY key),
up AS (
  INSERT INTO central.pace AS p (key, tat)
  SELECT key, statement_timestamp() + span * interval '1 second' FROM v ORDER BY key
  ON CONFLICT (key) DO UPDATE
     SET prev = p.tat,
         tat = greatest(p.tat, statement_timestamp())
               + (SELECT v.span FROM v WHERE v.key = excluded.key) * interval '1 second'
  RETURNING key, prev),
due AS (
  SELECT f.ord, f.ticket,
         greatest(up.prev, statement_timestamp()) + (f.idx * f.t - f.tau) * interval '1 second' AS at
    FROM fresh f JOIN up ON up.key = f.key),
keep AS (
  INSERT INTO central.pace_tickets (ticket, due)
  SELECT ticket, at FROM due WHERE ticket <> '' AND at > statement_timestamp()
  ON CONFLICT (ticket) DO UPDATE SET due = excluded.due)
SELECT ord, greatest(extract(epoch FROM at - statement_timestamp()), 0)::float8 FROM due
UNION ALL
SELECT i.ord, greatest(extract(epoch FROM p.due - statement_timestamp()), 0)::float8
  FROM items i JOIN prior p ON p.ticket = i.ticket
