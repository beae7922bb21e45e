-- The messages of a batch that accept_batch counted, queued, in the
-- batch's order (on Citus, Config.Routed), one per element of the arrays.
-- Their ids are drawn from the table's sequence in that order (the
-- insert's projection runs after the ORDER BY), so the i-th smallest id it
-- returns is the i-th message's. On Citus the coordinator draws them,
-- reads the arrays and copies the rows to the tenant's node alone. The
-- column list begins as batchInsertMark (batch_internal_test.go), which
-- the tests count it by.
INSERT INTO ?schema.messages (created_at, sender_number_id, to_phone, recipient_user_id, type, content,
       file_name, file_size, file_type, duration, status, client_reference, updated_at)
SELECT x.created_at, x.sender, x.to_phone, x.recipient_user_id, x.type, x.content, x.file_name,
       x.file_size, x.file_type, x.duration, 'queued', x.client_reference, x.created_at
  FROM unnest(?senders::bigint[], ?to_phones::text[], ?recipient_user_ids::bigint[], ?types::text[],
              ?contents::text[], ?file_names::text[], ?file_sizes::int[], ?file_types::text[],
              ?durations::bigint[], ?client_references::text[], ?created::timestamptz[]) WITH ORDINALITY
       AS x(sender, to_phone, recipient_user_id, type, content, file_name, file_size, file_type,
            duration, client_reference, created_at, ord)
 ORDER BY x.ord
RETURNING id
