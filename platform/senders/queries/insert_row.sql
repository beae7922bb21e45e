-- A new sender number; a phone the organization has registered already is
-- a unique violation.
INSERT INTO ?schema.sender_numbers AS s
       (phone, display_name, status, verification_status, daily_limit_override,
        otp_hash, otp_expires_at, otp_attempts, otp_sent_at, otp_generation, otp_issued_at,
        verified_at, activated_at, created_at, updated_at)
VALUES (?phone::text, ?display_name::text, ?status::text, ?verification_status::text, ?daily_limit_override::int,
        ?otp_hash::bytea, ?otp_expires_at::timestamptz, ?otp_attempts::int, ?otp_sent_at::timestamptz,
        ?otp_generation::int, ?otp_issued_at::timestamptz,
        ?verified_at::timestamptz, ?activated_at::timestamptz, ?created_at::timestamptz, ?updated_at::timestamptz)
RETURNING s.id
