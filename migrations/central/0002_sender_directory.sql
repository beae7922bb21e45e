-- Where every sender number lives, across organizations. Written by the
-- senders service in the same transaction as the tenant row, so it never
-- disagrees with it. It lets operator commands find a number by phone and the
-- account-verification sweep find pending_account_verification numbers without
-- visiting every tenant schema.
CREATE TABLE sender_number_directory (
    organization_id bigint      NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    sender_id       bigint      NOT NULL,
    phone           text        NOT NULL,
    status          text        NOT NULL,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, sender_id),
    UNIQUE (organization_id, phone)
);
CREATE INDEX sender_number_directory_phone_idx ON sender_number_directory (phone);
CREATE INDEX sender_number_directory_pending_idx ON sender_number_directory (organization_id, sender_id)
    WHERE status = 'pending_account_verification';

-- A phone is active in at most one organization: the organization whose
-- number is active (or suspended after being active) holds the phone's row.
-- Rejecting the number releases it.
CREATE TABLE active_sender_phones (
    phone           text        PRIMARY KEY,
    organization_id bigint      NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    sender_id       bigint      NOT NULL,
    claimed_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX active_sender_phones_org_idx ON active_sender_phones (organization_id, sender_id);
