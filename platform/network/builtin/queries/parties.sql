-- The id of the sender's account (the phone from) and the recipient's
-- account (the phone to) with whether it blocks the sender, in one row
-- whose columns are NULL for a missing account (partyRow).
SELECT (SELECT id FROM network.accounts WHERE phone = ?from),
       a.id, a.phone, a.verified, a.verified_at, a.phone_verified, a.phone_verified_at,
       a.receiving_enabled,
       EXISTS (SELECT 1 FROM network.blocks b JOIN network.accounts s ON s.id = b.blocked_account_id
               WHERE b.account_id = a.id AND s.phone = ?from)
  FROM (SELECT 1) one LEFT JOIN network.accounts a ON a.phone = ?to
