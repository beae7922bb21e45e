-- A scheduled template message's release, with the service window (acceptVariant, statements.go).
WITH ?{accept_release_lock},
?{accept_template_approved},
?{accept_sender_by_id_window},
?{accept_release_template_steps}
