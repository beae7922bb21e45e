-- Lookups that waited together (Lookup's batch): the accounts holding the
-- normalised phones of the array phones, each with whether it blocks the
-- account of the phone at the same place of senders, numbered by their
-- place (from 1). A phone no account holds has no row.
SELECT q.i, a.id, a.phone, a.verified, a.verified_at, a.phone_verified,
       a.phone_verified_at, a.receiving_enabled,
       EXISTS (SELECT 1 FROM network.blocks b JOIN network.accounts s ON s.id = b.blocked_account_id
               WHERE b.account_id = a.id AND s.phone = q.sender)
  FROM unnest(?phones::text[], ?senders::text[]) WITH ORDINALITY AS q(phone, sender, i)
  JOIN network.accounts a ON a.phone = q.phone
