-- A receipt's move of a message between the status counters of its
-- acceptance day, each delta -1, 0 or 1 (moveCounters).
INSERT INTO ?schema.daily_usage AS u
       (sender_number_id, day, side, sent, delivered, read, failed)
VALUES (?sender_id::bigint, ?day::text::date, 'deliver', greatest(?sent::int, 0), greatest(?delivered::int, 0),
        greatest(?read::int, 0), greatest(?failed::int, 0))
ON CONFLICT (sender_number_id, day, side) DO UPDATE
   SET sent = u.sent + ?sent::int, delivered = u.delivered + ?delivered::int, read = u.read + ?read::int,
       failed = u.failed + ?failed::int
