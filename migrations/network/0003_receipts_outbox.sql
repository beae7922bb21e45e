-- Receipts and messages written by accounts (docs/api.md, §The built-in messaging network).
--
-- delivered_at: when the message reached the recipient's inbox. The built-in network stores a
-- message in the inbox as it accepts it, so it equals created_at. read_at: when the recipient
-- read it (`platform network read`); NULL while unread.
ALTER TABLE messages
    ADD COLUMN delivered_at timestamptz,
    ADD COLUMN read_at      timestamptz;
UPDATE messages SET delivered_at = created_at;

-- The outbox of what the network reports to the platform: receipts (kind 'receipt', payload
-- {reference, status, at}) and messages written to accounts (kind 'inbound', payload {id,
-- from_phone, to_phone, conversation_id, type, content, file fields, at}). Each row is written in
-- the transaction of the change it reports and applied by Network.Drain, which sets processed_at
-- once the platform took it. Delivered receipts are not written: Deliver answers them.
CREATE TABLE events (
    id           bigserial   PRIMARY KEY,
    kind         text        NOT NULL CHECK (kind IN ('receipt', 'inbound')),
    payload      jsonb       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    processed_at timestamptz
);
CREATE INDEX events_unprocessed_idx ON events (id) WHERE processed_at IS NULL;
