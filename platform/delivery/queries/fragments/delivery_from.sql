-- The FROM list of delivery_columns.
?schema.messages m
  JOIN ?schema.sender_numbers s ON s.id = m.sender_number_id
