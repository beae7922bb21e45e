-- For each of phones, the pool sender (among pool) of the newest
-- outbound message of the organization to it, if any
-- (messages_to_phone_idx: one probe per phone).
SELECT p.phone, (SELECT m.sender_number_id FROM ?schema.messages m
         WHERE m.to_phone = p.phone AND m.direction = 'outbound'
           AND m.sender_number_id = ANY(?pool::bigint[]) AND m.status NOT IN ('scheduled', 'canceled')
         ORDER BY m.id DESC LIMIT 1)
  FROM unnest(?phones::text[]) AS p(phone)
