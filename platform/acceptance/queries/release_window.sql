-- A scheduled message's release, with the service window (acceptVariant, statements.go).
WITH ?{accept_release_lock},
?{accept_sender_by_id_window},
?{accept_release_steps}
