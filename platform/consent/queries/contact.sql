-- Whether phone is on the list, and when it last wrote to sender number
-- sender_id (null: never).
SELECT EXISTS (SELECT 1 FROM ?schema.opt_outs WHERE phone = ?phone) AS opted_out,
       (SELECT at FROM ?schema.last_inbound WHERE sender_number_id = ?sender_id AND phone = ?phone) AS last_inbound
