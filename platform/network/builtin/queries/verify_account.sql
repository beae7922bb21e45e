-- Marks the account owner of the phone verified (keeping the first
-- verification time) and returns the account (scanAccount).
UPDATE network.accounts AS a
   SET verified = true, verified_at = coalesce(a.verified_at, ?now), updated_at = ?now
 WHERE a.phone = ?phone
RETURNING a.id, a.phone, a.verified, a.verified_at, a.phone_verified, a.phone_verified_at,
          a.receiving_enabled, false
