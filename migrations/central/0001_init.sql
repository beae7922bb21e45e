-- Organizations: one tenant schema each.
CREATE TABLE organizations (
    id                  bigserial PRIMARY KEY,
    name                text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    schema_name         text        UNIQUE,
    subscription_status text        NOT NULL DEFAULT 'trialing'
                        CHECK (subscription_status IN ('trialing', 'active', 'past_due', 'canceled')),
    default_daily_limit integer     NOT NULL DEFAULT 1000 CHECK (default_daily_limit >= 1),
    sender_rate         double precision CHECK (sender_rate > 0),
    sender_burst        integer     CHECK (sender_burst >= 1),
    api_rate_limit      double precision CHECK (api_rate_limit > 0),
    api_rate_burst      integer     CHECK (api_rate_burst >= 1),
    created_at          timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
    id            bigserial PRIMARY KEY,
    email         text        NOT NULL,
    name          text        NOT NULL,
    password_hash text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

CREATE TABLE memberships (
    organization_id bigint      NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_id         bigint      NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role            text        NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, user_id)
);
CREATE INDEX memberships_user_idx ON memberships (user_id);

CREATE TABLE api_keys (
    id                 bigserial PRIMARY KEY,
    organization_id    bigint      NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    created_by_user_id bigint      REFERENCES users (id) ON DELETE SET NULL,
    name               text        NOT NULL,
    prefix             text        NOT NULL UNIQUE,
    key_hash           bytea       NOT NULL,
    key_sealed         bytea,
    scopes             text[]      NOT NULL,
    expires_at         timestamptz NOT NULL,
    revoked_at         timestamptz,
    last_used_at       timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_keys_org_idx ON api_keys (organization_id, id DESC);

CREATE TABLE refresh_tokens (
    id              bigserial PRIMARY KEY,
    user_id         bigint      NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    organization_id bigint      NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    family_id       uuid        NOT NULL,
    token_hash      bytea       NOT NULL UNIQUE,
    expires_at      timestamptz NOT NULL,
    used_at         timestamptz,
    revoked_at      timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX refresh_tokens_family_idx ON refresh_tokens (family_id);
CREATE INDEX refresh_tokens_expires_idx ON refresh_tokens (expires_at);

CREATE TABLE audit_log (
    id              bigserial PRIMARY KEY,
    organization_id bigint      REFERENCES organizations (id) ON DELETE CASCADE,
    actor_user_id   bigint      REFERENCES users (id) ON DELETE SET NULL,
    action          text        NOT NULL,
    target          text        NOT NULL DEFAULT '',
    details         jsonb       NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_log_org_idx ON audit_log (organization_id, id DESC);
