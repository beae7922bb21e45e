-- Who delivers a message now, and whether its delivery is failing
-- (docs/design.md, §Delivery order).
--
-- claimed_by and claimed_at: the delivery job that claimed the message last,
-- and when. A claim is the job's for the delivery run bound: another job's
-- claim of the message waits until then (platform/messages, claimOneSQL and
-- lockMessagesSQL), so that one job at a time delivers a conversation's
-- next message, and a job killed mid-delivery is taken over once its bound
-- has passed (or at once by its own rescued run).
--
-- failing_since: when the message's delivery first failed with a transient
-- error. A queued message holds the later messages of its conversation back
-- until it has been failing for the order window; a message that is merely
-- waiting, however long, always does.
--
-- Nullable columns without a default: adding them rewrites nothing.
ALTER TABLE messages
    ADD COLUMN claimed_by bigint,
    ADD COLUMN claimed_at timestamptz,
    ADD COLUMN failing_since timestamptz;
