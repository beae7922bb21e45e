-- Stores a text message written with Send, in one statement (one
-- transaction), with the network's own reference, the prefix followed by
-- the message id: the message from the account from_id to the account
-- to_id in the conversation, its text, written (and delivered) at now, and
-- the inbound event (kind inbound_kind) for it, whose phones are from_phone
-- and to_phone. It returns the columns scanInbox reads (the sender's and
-- recipient's phones those given).
WITH m AS (
  INSERT INTO network.messages
         (id, conversation_id, from_account_id, to_account_id, type, content, reference, created_at, delivered_at)
  SELECT i.id, ?conversation_id, ?from_id, ?to_id, 'text', ?text, ?prefix::text || i.id, ?now, ?now
    FROM (SELECT nextval('network.messages_id_seq'::regclass) AS id) i
  RETURNING *),
ev AS (
  INSERT INTO network.events (kind, payload, created_at)
  SELECT ?inbound_kind::text, jsonb_build_object('id', m.id::text, 'from_phone', ?from_phone::text,
                                                 'to_phone', ?to_phone::text,
                                                 'conversation_id', m.conversation_id, 'type', m.type,
                                                 'content', m.content, 'at', m.created_at), ?now
    FROM m)
SELECT m.id, m.conversation_id, ?from_phone::text, ?to_phone::text, m.type, m.content, '', 0::bigint, '', 0,
       m.reference, m.created_at, m.delivered_at, m.read_at
  FROM m
