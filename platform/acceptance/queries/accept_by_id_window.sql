-- A message's acceptance, its sender by id, with the service window (acceptVariant, statements.go).
WITH ?{accept_sender_by_id_window},
?{accept_send_steps}
