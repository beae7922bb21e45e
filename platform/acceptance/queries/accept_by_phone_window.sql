-- A message's acceptance, its sender by phone, with the service window (acceptVariant, statements.go).
WITH ?{accept_sender_by_phone_window},
?{accept_send_steps}
