-- A template message's acceptance, its sender by id, with the service window (acceptVariant, statements.go).
WITH ?{accept_template_approved},
?{accept_sender_by_id_window},
?{accept_template_steps}
