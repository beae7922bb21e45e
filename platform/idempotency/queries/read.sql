-- The record of an Idempotency-Key: the request's fingerprint, the stored
-- answer (none while its send is in progress) and when it was claimed.
SELECT request_hash, status_code, response_body, created_at FROM ?schema.idempotency_keys WHERE key = ?key::text
