-- Marks Drain's applied events processed.
UPDATE network.events SET processed_at = ?now WHERE id = ANY(?ids)
