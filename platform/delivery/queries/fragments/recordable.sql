-- Whether message x may take a sent record: a CASE, never an index
-- condition (statements.go, recordable).
CASE WHEN x.status = 'queued' THEN true
     WHEN x.status IN ('delivered', 'read', 'failed') THEN x.message_id IS NULL
     ELSE false END
