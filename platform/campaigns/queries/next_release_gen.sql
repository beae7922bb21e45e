-- Raises campaign id's release generation and returns it.
UPDATE ?schema.campaigns c SET release_gen = c.release_gen + 1 WHERE c.id = ?id RETURNING c.release_gen
