-- Scheduled sends (docs/api.md, §Scheduled sends; docs/design.md,
-- §Scheduled sends).
--
-- send_at:     when a scheduled message is due for release; null for a
--              message sent at once. It stays on the message after its
--              release, so the history tells a scheduled send apart.
-- canceled_at: when a scheduled message was canceled; null otherwise.
--
-- A scheduled message waits in status 'scheduled' (counted against no limit)
-- until its release job (River, scheduled at send_at) turns it 'queued' or
-- 'failed'; 'canceled' ends a scheduled message before its release. Both
-- columns are nullable without a default: adding them rewrites nothing.
-- Release is by River's own scheduled_at index, so no index on send_at is
-- needed; status=scheduled and status=canceled filter the history through
-- messages_status_idx, and usage counts the scheduled ones through it too.
ALTER TABLE messages
    ADD COLUMN send_at     timestamptz,
    ADD COLUMN canceled_at timestamptz;

-- The status check gains the two statuses. Its new form admits every
-- existing row; adding it reads the table once (no rewrite).
ALTER TABLE messages DROP CONSTRAINT messages_status_check;
ALTER TABLE messages ADD CONSTRAINT messages_status_check
    CHECK (status IN ('scheduled', 'queued', 'sent', 'delivered', 'read', 'failed', 'received', 'canceled'));
