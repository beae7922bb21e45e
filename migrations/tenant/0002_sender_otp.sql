-- OTP bookkeeping for sender numbers.
-- otp_generation counts the OTPs issued for a number: it is part of the hash
-- input and of the OTP message's delivery reference, so a retried delivery job
-- never sends twice and a job for a superseded code sends nothing.
-- otp_issued_at is when the current code was issued (resend cooldown).
ALTER TABLE sender_numbers
    ADD COLUMN otp_generation integer     NOT NULL DEFAULT 0,
    ADD COLUMN otp_issued_at  timestamptz;
