-- The inbound message by VALUES, nothing when the network's id was stored
-- before (storeInboundRouted); its rows are the status before ('') and
-- the message.
INSERT INTO ?schema.messages AS m (direction, sender_number_id, to_phone,
       from_phone, conversation_id, type, content, file_name, file_size, file_type, duration, status,
       received_at, network_inbound_id, created_at, updated_at)
VALUES ('inbound', ?sender_id::bigint, ?to_phone::text, ?from_phone::text, ?conversation_id::bigint, ?type::text, ?content::text, ?file_name::text, ?file_size::bigint,
        ?file_type::text, ?duration::bigint, 'received', ?received_at::timestamptz, ?network_id::text, ?now::timestamptz, ?now::timestamptz)
ON CONFLICT (network_inbound_id) WHERE network_inbound_id IS NOT NULL DO NOTHING
RETURNING ''::text, ?{message_columns}
