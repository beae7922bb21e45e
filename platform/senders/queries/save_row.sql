-- Writes back a sender number its transaction holds (read under its lock,
-- or inserted there): every column that may change, so that one text
-- writes any transition. The row is locked, so the columns a transition
-- leaves alone are written as they were read.
UPDATE ?schema.sender_numbers AS s
   SET display_name = ?display_name::text, status = ?status::text,
       verification_status = ?verification_status::text, daily_limit_override = ?daily_limit_override::int,
       otp_hash = ?otp_hash::bytea, otp_expires_at = ?otp_expires_at::timestamptz,
       otp_attempts = ?otp_attempts::int, otp_sent_at = ?otp_sent_at::timestamptz,
       otp_generation = ?otp_generation::int, otp_issued_at = ?otp_issued_at::timestamptz,
       verified_at = ?verified_at::timestamptz, activated_at = ?activated_at::timestamptz,
       updated_at = ?updated_at::timestamptz
 WHERE s.id = ?id::bigint
