-- lockUsage: the 'deliver' counters of (senders, days) locked in sender and
-- day order, the missing ones created, with their dispatched counts.
INSERT INTO ?schema.daily_usage AS d (sender_number_id, day, side)
SELECT v.sender, v.day::date, 'deliver' FROM unnest(?senders::bigint[], ?days::text[]) v(sender, day)
 ORDER BY v.sender, v.day::date
ON CONFLICT (sender_number_id, day, side) DO UPDATE SET dispatched = d.dispatched
RETURNING d.sender_number_id, d.day::text, d.dispatched
