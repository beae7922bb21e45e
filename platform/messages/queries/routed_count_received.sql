-- A stored inbound message's day in the received counter
-- (storeInboundRouted).
INSERT INTO ?schema.daily_usage AS u (sender_number_id, day, side, received)
VALUES (?sender_id::bigint, ?day::date, 'receive', 1)
ON CONFLICT (sender_number_id, day, side) DO UPDATE SET received = u.received + 1
