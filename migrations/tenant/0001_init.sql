-- Every organization's own tables. Applied to each tenant_<id> schema.
CREATE TABLE sender_numbers (
    id                   bigserial PRIMARY KEY,
    phone                text        NOT NULL UNIQUE,
    display_name         text        NOT NULL DEFAULT '',
    status               text        NOT NULL DEFAULT 'pending_verification'
                         CHECK (status IN ('pending_verification', 'active', 'pending_account_verification',
                                           'suspended', 'rejected')),
    verification_status  text        NOT NULL DEFAULT 'pending_verification'
                         CHECK (verification_status IN ('pending_verification', 'verified')),
    daily_limit_override integer     CHECK (daily_limit_override >= 1),
    otp_hash             bytea,
    otp_expires_at       timestamptz,
    otp_attempts         integer     NOT NULL DEFAULT 0,
    otp_sent_at          timestamptz,
    verified_at          timestamptz,
    activated_at         timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sender_numbers_status_idx ON sender_numbers (status);

CREATE TABLE messages (
    id                bigserial PRIMARY KEY,
    sender_number_id  bigint      NOT NULL REFERENCES sender_numbers (id),
    to_phone          text        NOT NULL,
    recipient_user_id bigint,
    conversation_id   bigint,
    message_id        bigint,
    type              text        NOT NULL CHECK (type IN ('text', 'image', 'voice', 'document')),
    content           text        NOT NULL,
    file_name         text,
    file_size         bigint,
    file_type         text,
    duration          integer,
    status            text        NOT NULL DEFAULT 'queued'
                      CHECK (status IN ('queued', 'sent', 'delivered', 'failed')),
    error_code        text,
    error_message     text,
    client_reference  text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    sent_at           timestamptz,
    delivered_at      timestamptz,
    failed_at         timestamptz,
    updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX messages_sender_idx ON messages (sender_number_id, id DESC);
CREATE INDEX messages_to_phone_idx ON messages (to_phone, id DESC);
CREATE INDEX messages_status_idx ON messages (status, id DESC);
CREATE INDEX messages_created_idx ON messages (created_at, id);
CREATE INDEX messages_client_reference_idx ON messages (client_reference, id DESC) WHERE client_reference IS NOT NULL;

-- Messages accepted per sender per UTC day; reserved atomically at acceptance.
CREATE TABLE daily_usage (
    sender_number_id bigint  NOT NULL REFERENCES sender_numbers (id),
    day              date    NOT NULL,
    used             integer NOT NULL DEFAULT 0 CHECK (used >= 0),
    PRIMARY KEY (sender_number_id, day)
);

-- Idempotency-Key records for POST /messages, kept 24 hours.
CREATE TABLE idempotency_keys (
    key           text        PRIMARY KEY,
    request_hash  bytea       NOT NULL,
    status_code   integer,
    response_body bytea,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
