-- A sent record of one message up to m's RETURNING: o locks it, m records.
o AS (
  SELECT x.id, x.status FROM ?schema.messages x
   WHERE x.id = ?id::bigint AND ?{recordable} FOR UPDATE OF x),
m AS (
  UPDATE ?schema.messages x
     SET ?{sent_set}
    FROM o, (SELECT ?message_id::bigint AS message_id, ?conversation_id::bigint AS conversation_id,
                    ?recipient_id::bigint AS recipient_id, ?sent_at::timestamptz AS sent_at,
                    ?delivered::boolean AS delivered) v
   WHERE x.id = o.id
