-- Claims a key for a send, as its transaction's first write: a key held by
-- a send in progress makes this wait until that send commits or rolls
-- back; a key claimed at or before the expiry argument is taken over. It returns the
-- key when this send holds it.
INSERT INTO ?schema.idempotency_keys AS k (key, request_hash, created_at)
VALUES (?key::text, ?hash::bytea, ?now::timestamptz)
ON CONFLICT (key) DO UPDATE
   SET request_hash = EXCLUDED.request_hash, status_code = NULL, response_body = NULL,
       created_at = EXCLUDED.created_at
 WHERE k.created_at <= ?expired::timestamptz
RETURNING k.key
