-- An inbound message, to an active sender number of the tenant, in one
-- statement (storeInbound): the message (nothing when the number is not
-- active in the tenant's table or the network's id was stored before),
-- and for a stored one its day's received counter and last_inbound.
WITH s AS (
  SELECT id, phone FROM ?schema.sender_numbers
   WHERE id = ?sender_id::bigint AND phone = ?to_phone::text AND status = 'active'),
m AS (
  INSERT INTO ?schema.messages (direction, sender_number_id, to_phone, from_phone, conversation_id,
         type, content, file_name, file_size, file_type, duration, status, received_at,
         network_inbound_id, created_at, updated_at)
  SELECT 'inbound', s.id, s.phone, ?from_phone::text, ?conversation_id::bigint, ?type::text, ?content::text, ?file_name::text, ?file_size::bigint,
         ?file_type::text, ?duration::bigint, 'received', ?received_at::timestamptz, ?network_id::text, ?now::timestamptz,
         ?now::timestamptz
    FROM s
  ON CONFLICT (network_inbound_id) WHERE network_inbound_id IS NOT NULL DO NOTHING
  RETURNING ''::text AS old_status, *),
u AS (
  INSERT INTO ?schema.daily_usage AS u (sender_number_id, day, side, received)
  SELECT sender_number_id, (created_at AT TIME ZONE 'UTC')::date, 'receive', 1 FROM m
  ON CONFLICT (sender_number_id, day, side) DO UPDATE SET received = u.received + 1),
l AS (
  INSERT INTO ?schema.last_inbound AS l (sender_number_id, phone, at)
  SELECT sender_number_id, from_phone, received_at FROM m
  ON CONFLICT (sender_number_id, phone) DO UPDATE SET at = greatest(l.at, EXCLUDED.at))
SELECT m.old_status, ?{message_columns} FROM m
