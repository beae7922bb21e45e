-- outcome's transient failure of queued message id: failing since now
-- (kept if it already was), and its claim released unless keep_claim.
UPDATE ?schema.messages
   SET failing_since = coalesce(failing_since, ?now::timestamptz),
       claimed_by = CASE WHEN ?keep_claim::boolean THEN claimed_by END
 WHERE id = ?id::bigint AND status = 'queued'
