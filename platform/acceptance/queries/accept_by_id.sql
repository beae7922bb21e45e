-- A message's acceptance, its sender by id (acceptVariant, statements.go).
WITH ?{accept_sender_by_id},
?{accept_send_steps}
