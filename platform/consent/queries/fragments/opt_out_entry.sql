-- An opt-out entry's columns (the table as o), in scanEntry's order.
o.id, o.phone, o.source, o.keyword, o.sender_number_id, o.note, o.created_at
