-- Creates the account of the phone, or updates it, to the state given, and
-- returns it (scanAccount). A verification time is set when a flag turns
-- true, kept while it stays true and cleared when it turns false.
INSERT INTO network.accounts AS a
       (phone, verified, verified_at, phone_verified, phone_verified_at, receiving_enabled, created_at, updated_at)
VALUES (?phone, ?verified::boolean, CASE WHEN ?verified::boolean THEN ?now::timestamptz END,
        ?phone_verified::boolean, CASE WHEN ?phone_verified::boolean THEN ?now::timestamptz END,
        ?receiving_enabled, ?now, ?now)
ON CONFLICT (phone) DO UPDATE SET
    verified          = EXCLUDED.verified,
    verified_at       = CASE WHEN EXCLUDED.verified THEN coalesce(a.verified_at, EXCLUDED.updated_at) END,
    phone_verified    = EXCLUDED.phone_verified,
    phone_verified_at = CASE WHEN EXCLUDED.phone_verified THEN coalesce(a.phone_verified_at, EXCLUDED.updated_at) END,
    receiving_enabled = EXCLUDED.receiving_enabled,
    updated_at        = EXCLUDED.updated_at
RETURNING a.id, a.phone, a.verified, a.verified_at, a.phone_verified, a.phone_verified_at,
          a.receiving_enabled, false
