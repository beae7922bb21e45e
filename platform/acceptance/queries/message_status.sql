-- A message's status, inbound or outbound: a cancellation of a message
-- that exists but is not scheduled (an inbound one too) is 409
-- not_cancelable, not 404 (docs/api.md, §Scheduled sends).
SELECT status FROM ?schema.messages WHERE id = ?id::bigint
