-- A sent record of messages ids up to m's RETURNING: o locks them in id
-- order, m records each one's delivery (the arrays, in ids' order).
o AS (
  SELECT x.id, x.status FROM ?schema.messages x
   WHERE x.id = ANY(?ids::bigint[]) AND ?{recordable}
   ORDER BY x.id FOR UPDATE OF x),
m AS (
  UPDATE ?schema.messages x
     SET ?{sent_set}
    FROM o JOIN unnest(?ids::bigint[], ?message_ids::bigint[], ?conversation_ids::bigint[],
                       ?recipient_ids::bigint[], ?sent_ats::timestamptz[], ?delivered::boolean[])
         v(id, message_id, conversation_id, recipient_id, sent_at, delivered) ON v.id = o.id
   WHERE x.id = o.id
