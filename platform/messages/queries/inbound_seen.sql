-- Whether an inbound message of the network's id was stored before
-- (Receive, when nothing was stored).
SELECT EXISTS (SELECT 1 FROM ?schema.messages WHERE network_inbound_id = ?network_id)
