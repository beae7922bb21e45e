-- daily_usage keeps each sender's day in two rows, one per side, so that
-- acceptance and delivery never wait on each other's row lock:
--   side 'accept':  used (acceptance reserves a place under the daily limit);
--   side 'deliver': dispatched, sent, delivered, failed (the delivery
--                   worker's claim under the limit and the outcomes).
-- Each side locks its own row until its commit; before this migration a
-- delivery batch's claim or sent record held the row every acceptance of the
-- sender needed (docs/performance.md, §daily_usage sides). The usage
-- endpoint sums both rows.
-- The primary key index is replaced, so a tenant keeps its number of
-- relation files; `side` is stored plain (never compressed or moved out of
-- line, which a six-letter value never needs), so the table gets no TOAST
-- table either.
ALTER TABLE daily_usage
    ADD COLUMN side text NOT NULL DEFAULT 'accept' CHECK (side IN ('accept', 'deliver')),
    ALTER COLUMN side SET STORAGE PLAIN;
ALTER TABLE daily_usage DROP CONSTRAINT daily_usage_pkey;
ALTER TABLE daily_usage ADD PRIMARY KEY (sender_number_id, day, side);

INSERT INTO daily_usage (sender_number_id, day, side, dispatched, sent, delivered, failed)
SELECT sender_number_id, day, 'deliver', dispatched, sent, delivered, failed
  FROM daily_usage
 WHERE dispatched > 0 OR sent > 0 OR delivered > 0 OR failed > 0;
UPDATE daily_usage SET dispatched = 0, sent = 0, delivered = 0, failed = 0
 WHERE side = 'accept' AND (dispatched > 0 OR sent > 0 OR delivered > 0 OR failed > 0);

ALTER TABLE daily_usage ADD CONSTRAINT daily_usage_side_columns CHECK (
       side = 'accept' AND dispatched = 0 AND sent = 0 AND delivered = 0 AND failed = 0
    OR side = 'deliver' AND used = 0);
