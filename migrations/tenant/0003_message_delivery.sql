-- Message delivery bookkeeping (platform/messages).
--
-- daily_usage gets, beside `used` (messages accepted per sender per UTC day of
-- acceptance, reserved at acceptance), the delivery side of the same day:
--   dispatched: messages the delivery worker let through the daily-limit
--               re-check (claimed atomically, so a lowered limit holds exactly);
--   sent, delivered, failed: messages of that day now in that status.
-- Queued messages are used - sent - delivered - failed. The usage endpoint
-- reads these counters instead of counting message rows.
ALTER TABLE daily_usage
    ADD COLUMN dispatched integer NOT NULL DEFAULT 0 CHECK (dispatched >= 0),
    ADD COLUMN sent       integer NOT NULL DEFAULT 0 CHECK (sent >= 0),
    ADD COLUMN delivered  integer NOT NULL DEFAULT 0 CHECK (delivered >= 0),
    ADD COLUMN failed     integer NOT NULL DEFAULT 0 CHECK (failed >= 0);
CREATE INDEX daily_usage_day_idx ON daily_usage (day);

-- When the delivery worker claimed the message's place under the daily limit.
-- A retried job finds it set and does not claim twice.
ALTER TABLE messages ADD COLUMN dispatched_at timestamptz;
