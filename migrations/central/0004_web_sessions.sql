-- Dashboard sessions (package web). The browser holds a random 32-byte token
-- in an HttpOnly cookie; only its SHA-256 is stored here, so a copy of this
-- table opens no session. A session ends when it is idle too long
-- (last_seen_at), when it reaches expires_at (absolute lifetime), at logout
-- (the row is deleted), and when its user or organization goes.
CREATE TABLE web_sessions (
    id              bigserial PRIMARY KEY,
    token_hash      bytea       NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    user_id         bigint      NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    organization_id bigint      NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    created_at      timestamptz NOT NULL,
    last_seen_at    timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL
);
CREATE INDEX web_sessions_user_idx ON web_sessions (user_id);
CREATE INDEX web_sessions_expires_idx ON web_sessions (expires_at);
