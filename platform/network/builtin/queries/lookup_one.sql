-- Lookup of one phone, what a network that is not busy runs (its plan is a
-- plain index lookup): the account holding the normalised phone, numbered 1,
-- with whether it blocks the account of the phone sender (an empty phone
-- matches no account). No row when no account holds the phone. The columns
-- are those of lookup_many.
SELECT q.i, a.id, a.phone, a.verified, a.verified_at, a.phone_verified,
       a.phone_verified_at, a.receiving_enabled,
       EXISTS (SELECT 1 FROM network.blocks b JOIN network.accounts s ON s.id = b.blocked_account_id
               WHERE b.account_id = a.id AND s.phone = q.sender)
  FROM (SELECT 1::bigint AS i, ?phone::text AS phone, ?sender::text AS sender) q
  JOIN network.accounts a ON a.phone = q.phone
