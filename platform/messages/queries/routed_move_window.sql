-- A stored inbound message moves its writer's service window for the
-- number (storeInboundRouted).
INSERT INTO ?schema.last_inbound AS l (sender_number_id, phone, at)
VALUES (?sender_id::bigint, ?phone::text, ?at::timestamptz)
ON CONFLICT (sender_number_id, phone) DO UPDATE SET at = greatest(l.at, EXCLUDED.at)
