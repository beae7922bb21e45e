-- Delivery order per conversation (docs/api.md, §Delivery order): before a
-- message of a sender number to a recipient is delivered, the delivery
-- claim looks for an earlier message of the same pair that is still queued
-- (platform/messages, lockMessagesSQL and claimOneSQL). This index is that
-- look: one probe per claimed message, backwards from its id.
--
-- It is partial, so that it holds only the messages waiting for delivery
-- (queued messages are all outbound: messages_direction_check). A message
-- enters it at acceptance (an index insert every send pays) and leaves it
-- when its sent or failed record moves it out of queued (an update that
-- already writes a new messages_status_idx entry); vacuum removes the dead
-- entries.
CREATE INDEX messages_queued_conversation_idx ON messages (sender_number_id, to_phone, id)
    WHERE status = 'queued';
