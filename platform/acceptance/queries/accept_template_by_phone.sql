-- A template message's acceptance, its sender by phone (acceptVariant, statements.go).
WITH ?{accept_template_approved},
?{accept_sender_by_phone},
?{accept_template_steps}
