-- Whether campaign id has a recipient pending with id from on and a
-- message queued with id low on (marks: 0, 0 reads them all). The
-- recipient is the first pending one in id order, not an EXISTS:
-- Postgres drops the order from an EXISTS and planned it as a sequential
-- scan that walked the recipients released before the first pending one
-- (12 ms at 33,000 released in the bench; 0.1 ms through the index). The
-- message stays an EXISTS, which takes the campaign's status index; in
-- id order it took the tenant's (status, id) index and walked every
-- queued entry (10 ms).
SELECT (SELECT id FROM ?schema.campaign_recipients
         WHERE campaign_id = ?id::bigint AND status = 'pending' AND id >= ?from::bigint
         ORDER BY id LIMIT 1) IS NOT NULL,
       EXISTS (SELECT 1 FROM ?schema.messages
                WHERE campaign_id = ?id::bigint AND status = 'queued' AND id >= ?low::bigint)
