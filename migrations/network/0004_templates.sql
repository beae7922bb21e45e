-- Template reviews (docs/api.md, §Templates): the built-in network reviews a
-- submitted template at once and reports its verdict through the outbox,
-- as kind 'template' (payload {reference, status, reason, at}), which
-- Network.Drain gives to the platform like receipts.
ALTER TABLE events DROP CONSTRAINT events_kind_check;
ALTER TABLE events ADD CONSTRAINT events_kind_check CHECK (kind IN ('receipt', 'inbound', 'template'));
