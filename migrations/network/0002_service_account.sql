-- Phones are stored in E.164 ("+" and at most 15 digits), except the platform's
-- own service account, whose reserved phone "platform" can never be a real
-- number. The service account sends OTP messages and receives nothing.
ALTER TABLE accounts
    ADD CONSTRAINT accounts_phone_format CHECK (phone = 'platform' OR phone ~ '^\+[1-9][0-9]{1,14}$');

INSERT INTO accounts (phone, verified, phone_verified, receiving_enabled, verified_at, phone_verified_at)
VALUES ('platform', true, true, false, now(), now())
ON CONFLICT (phone) DO NOTHING;

-- Deleting an account cascades through these foreign keys.
CREATE INDEX messages_from_idx ON messages (from_account_id);
CREATE INDEX blocks_blocked_idx ON blocks (blocked_account_id);
CREATE INDEX conversations_high_idx ON conversations (high_account_id);
