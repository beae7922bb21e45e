-- A message's acceptance, its sender by phone (acceptVariant, statements.go).
WITH ?{accept_sender_by_phone},
?{accept_send_steps}
