-- A template message's acceptance, its sender by phone, with the service window (acceptVariant, statements.go).
WITH ?{accept_template_approved},
?{accept_sender_by_phone_window},
?{accept_template_steps}
