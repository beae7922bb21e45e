-- insert_message for a batch (DeliverBatch), in one statement (one commit)
-- whatever its size. Each message is the i-th element of the arrays: its
-- account pair (lows[i] < highs[i]), sender, recipient, type, content, file
-- name, file size, file type and duration ('' and 0 for none: stored NULL
-- as Deliver does) and reference, the references all different; now is the
-- delivery time.
--
-- Like insert_message it gets or creates the conversation of each pair, but
-- creates none for a pair whose messages' references all exist already, and
-- a pair whose conversation another call created after this statement began
-- conflicts and gets none: its messages are not inserted (the caller
-- delivers them again, one by one). A message whose reference exists is not
-- inserted either. It returns the reference, id, conversation and time of
-- each message inserted.
--
-- Each pair's conversation is found by a scalar subquery on the pair's
-- unique index, whatever the plan (see batch_parties).
--
-- Message ids are drawn in the order of the arrays, so they follow the
-- batch's order as successive Deliver calls would. Rows are inserted in a
-- fixed order, conversations by pair and then messages by reference, so
-- that concurrent batches sharing pairs or references wait for one another
-- instead of deadlocking. (The sort over all messages makes every
-- conversation exist before the first message is inserted.)
WITH input AS (
  SELECT nextval('network.messages_id_seq'::regclass) AS id, m.*
    FROM unnest(?lows::bigint[], ?highs::bigint[], ?from_ids::bigint[], ?to_ids::bigint[], ?types::text[],
                ?contents::text[], ?file_names::text[], ?file_sizes::bigint[], ?file_types::text[],
                ?durations::bigint[], ?references::text[]) WITH ORDINALITY
         AS m(low, high, from_id, to_id, type, content, file_name, file_size, file_type, duration,
              reference, ord)
   ORDER BY m.ord),
existing AS (
  SELECT p.low, p.high,
         (SELECT c.id FROM network.conversations c
           WHERE c.low_account_id = p.low AND c.high_account_id = p.high) AS id
    FROM (SELECT DISTINCT low, high FROM input) p),
created AS (
  INSERT INTO network.conversations (low_account_id, high_account_id, created_at)
  SELECT DISTINCT m.low, m.high, ?now::timestamptz FROM input m
   WHERE NOT EXISTS (SELECT 1 FROM existing e WHERE e.low = m.low AND e.high = m.high AND e.id IS NOT NULL)
     AND NOT EXISTS (SELECT 1 FROM network.messages x WHERE x.reference = m.reference)
   ORDER BY m.low, m.high
  ON CONFLICT (low_account_id, high_account_id) DO NOTHING
  RETURNING id, low_account_id AS low, high_account_id AS high),
conv AS (SELECT id, low, high FROM existing WHERE id IS NOT NULL UNION ALL SELECT id, low, high FROM created)
INSERT INTO network.messages
       (id, conversation_id, from_account_id, to_account_id, type, content,
        file_name, file_size, file_type, duration, reference, created_at, delivered_at)
SELECT m.id, c.id, m.from_id, m.to_id, m.type, m.content,
       NULLIF(m.file_name, ''), NULLIF(m.file_size, 0), NULLIF(m.file_type, ''),
       NULLIF(m.duration, 0)::integer, m.reference, ?now, ?now
  FROM input m JOIN conv c ON c.low = m.low AND c.high = m.high
 ORDER BY m.reference
ON CONFLICT (reference) DO NOTHING
RETURNING reference, id, conversation_id, created_at
