-- The built-in messaging network: accounts, blocks, conversations, messages.
CREATE TABLE accounts (
    id                bigserial PRIMARY KEY,
    phone             text        NOT NULL UNIQUE,
    verified          boolean     NOT NULL DEFAULT true,
    phone_verified    boolean     NOT NULL DEFAULT true,
    receiving_enabled boolean     NOT NULL DEFAULT true,
    verified_at       timestamptz,
    phone_verified_at timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);

-- A recipient (account_id) blocks a sender (blocked_account_id).
CREATE TABLE blocks (
    account_id         bigint      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    blocked_account_id bigint      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    created_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, blocked_account_id)
);

-- One conversation per unordered pair of accounts (low_account_id < high_account_id).
CREATE TABLE conversations (
    id              bigserial PRIMARY KEY,
    low_account_id  bigint      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    high_account_id bigint      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CHECK (low_account_id < high_account_id),
    UNIQUE (low_account_id, high_account_id)
);

CREATE TABLE messages (
    id              bigserial PRIMARY KEY,
    conversation_id bigint      NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    from_account_id bigint      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    to_account_id   bigint      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    type            text        NOT NULL,
    content         text        NOT NULL,
    file_name       text,
    file_size       bigint,
    file_type       text,
    duration        integer,
    reference       text        NOT NULL UNIQUE,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX messages_to_idx ON messages (to_account_id, id);
