-- Keeps a send's answer under its key for replays.
UPDATE ?schema.idempotency_keys SET status_code = ?status::int, response_body = ?body::bytea WHERE key = ?key::text
