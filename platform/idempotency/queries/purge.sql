-- Deletes the keys claimed before the given time.
DELETE FROM ?schema.idempotency_keys WHERE created_at < ?before::timestamptz
