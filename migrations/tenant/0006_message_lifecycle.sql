-- A message's whole lifecycle (platform/messages, docs/api.md §Message
-- lifecycle): read receipts, and inbound messages a network account wrote to
-- one of the organization's sender numbers.
--
-- direction:          'outbound' (sent through the API; every existing row)
--                     or 'inbound'. Added with a constant default, so no row
--                     is rewritten.
-- from_phone:         who wrote an inbound message; null for outbound ones
--                     (their sender is sender_number_id).
-- read_at:            when the recipient read an outbound message.
-- received_at:        when the network took an inbound message.
-- network_inbound_id: the network's id of an inbound message; unique, so a
--                     repeated inbound event stores nothing twice.
ALTER TABLE messages
    ADD COLUMN direction          text NOT NULL DEFAULT 'outbound',
    ADD COLUMN from_phone         text,
    ADD COLUMN read_at            timestamptz,
    ADD COLUMN received_at        timestamptz,
    ADD COLUMN network_inbound_id text;

-- Outbound: queued, sent, delivered, read, failed. Inbound: received only.
ALTER TABLE messages DROP CONSTRAINT messages_status_check;
ALTER TABLE messages ADD CONSTRAINT messages_status_check
    CHECK (status IN ('queued', 'sent', 'delivered', 'read', 'failed', 'received'));
ALTER TABLE messages ADD CONSTRAINT messages_direction_check CHECK (
       direction = 'outbound' AND status <> 'received'
    OR direction = 'inbound' AND status = 'received' AND from_phone IS NOT NULL
       AND received_at IS NOT NULL AND network_inbound_id IS NOT NULL);

CREATE UNIQUE INDEX messages_network_inbound_id_idx ON messages (network_inbound_id)
    WHERE network_inbound_id IS NOT NULL;
-- The history's direction=inbound and conversation_id filters, newest
-- first like the other filters' indexes. Both are partial: an outbound
-- message enters neither at acceptance (the insert every send pays), and
-- enters the conversation index once delivery sets its conversation_id (an
-- update that already changes messages_status_idx). direction=outbound needs
-- no index: the primary key serves it while outbound messages are most of
-- the rows.
CREATE INDEX messages_inbound_idx ON messages (id DESC) WHERE direction = 'inbound';
CREATE INDEX messages_conversation_idx ON messages (conversation_id, id DESC)
    WHERE conversation_id IS NOT NULL;

-- daily_usage: 'read' on the 'deliver' side (a delivered message the
-- recipient read moves from delivered to read, as delivered moved from
-- sent), and a third side, 'receive', whose row counts the inbound messages
-- written to the sender number that day. Inbound messages count against no
-- limit and take no lock that acceptance or delivery take.
ALTER TABLE daily_usage
    ADD COLUMN read     integer NOT NULL DEFAULT 0 CHECK (read >= 0),
    ADD COLUMN received integer NOT NULL DEFAULT 0 CHECK (received >= 0);
ALTER TABLE daily_usage DROP CONSTRAINT daily_usage_side_check;
ALTER TABLE daily_usage ADD CONSTRAINT daily_usage_side_check CHECK (side IN ('accept', 'deliver', 'receive'));
ALTER TABLE daily_usage DROP CONSTRAINT daily_usage_side_columns;
ALTER TABLE daily_usage ADD CONSTRAINT daily_usage_side_columns CHECK (
       side = 'accept' AND dispatched = 0 AND sent = 0 AND delivered = 0 AND failed = 0 AND read = 0
       AND received = 0
    OR side = 'deliver' AND used = 0 AND received = 0
    OR side = 'receive' AND used = 0 AND dispatched = 0 AND sent = 0 AND delivered = 0 AND failed = 0
       AND read = 0);
