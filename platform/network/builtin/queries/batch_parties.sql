-- parties for a batch (DeliverBatch): for each pair i of phones (froms[i]
-- the sender's, tos[i] the recipient's, i from 1) one row: i, then the
-- columns of parties (partyRow), NULL for a missing account.
--
-- The accounts are found per pair by a subquery on the phone index (a
-- scalar subquery, and a LATERAL one that OFFSET 0 keeps from being turned
-- into a join): the statement is prepared (pgx's statement cache), and the
-- generic plan Postgres switches to after five runs does not know the
-- arrays' length, so a join could become a scan of every account per batch.
SELECT p.i, p.sender_id,
       a.id, a.phone, a.verified, a.verified_at, a.phone_verified, a.phone_verified_at,
       a.receiving_enabled,
       EXISTS (SELECT 1 FROM network.blocks b WHERE b.account_id = a.id AND b.blocked_account_id = p.sender_id)
  FROM (SELECT x.i, x.to_phone, (SELECT s.id FROM network.accounts s WHERE s.phone = x.from_phone) AS sender_id
          FROM unnest(?froms::text[], ?tos::text[]) WITH ORDINALITY AS x(from_phone, to_phone, i)) p
  LEFT JOIN LATERAL (SELECT * FROM network.accounts a WHERE a.phone = p.to_phone OFFSET 0) a ON true
