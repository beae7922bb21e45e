-- Stored message id for its release (releaseAlone): its columns as
-- messages.Row scans them.
SELECT ?{message_columns} FROM ?schema.messages m WHERE m.id = ?id::bigint
