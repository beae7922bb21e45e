-- A scheduled message's release (acceptVariant, statements.go).
WITH ?{accept_release_lock},
?{accept_sender_by_id},
?{accept_release_steps}
