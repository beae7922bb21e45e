-- A sender number by id, locked for the transaction that changes it: every
-- transition reads its row here first, so concurrent requests change a
-- number once.
SELECT s.id, s.phone, s.display_name, s.status, s.verification_status, s.daily_limit_override,
       s.otp_hash, s.otp_expires_at, s.otp_attempts, s.otp_sent_at, s.otp_generation, s.otp_issued_at,
       s.verified_at, s.activated_at, s.created_at, s.updated_at
  FROM ?schema.sender_numbers AS s
 WHERE s.id = ?id::bigint
   FOR UPDATE OF s
