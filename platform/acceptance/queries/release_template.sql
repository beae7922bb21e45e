-- A scheduled template message's release (acceptVariant, statements.go).
WITH ?{accept_release_lock},
?{accept_template_approved},
?{accept_sender_by_id},
?{accept_release_template_steps}
