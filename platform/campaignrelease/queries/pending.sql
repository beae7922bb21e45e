-- The next limit pending recipients of campaign id from id from on, in
-- the order they were added. from (marks.from) starts the read past the
-- recipients the run has already ended, whose index entries stay behind
-- until a vacuum: read from 0 each time, the tick walked every one of them.
SELECT id, phone, variables, client_reference FROM ?schema.campaign_recipients
 WHERE campaign_id = ?id::bigint AND status = 'pending' AND id >= ?from::bigint ORDER BY id LIMIT ?limit
