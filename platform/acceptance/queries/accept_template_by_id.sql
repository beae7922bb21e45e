-- A template message's acceptance, its sender by id (acceptVariant, statements.go).
WITH ?{accept_template_approved},
?{accept_sender_by_id},
?{accept_template_steps}
