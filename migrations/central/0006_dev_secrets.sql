-- Development secrets (platform/devsecrets). When JWT_SECRET or
-- API_KEY_PEPPER is unset outside production, the first process to start
-- generates it and keeps it here, so a restart keeps API keys, access tokens,
-- OTPs and dashboard sessions working, and every process on the database
-- uses the same value. The first of several processes starting at once wins
-- (INSERT ... ON CONFLICT DO NOTHING, then SELECT). Production sets every
-- secret and never reads this table (PLATFORM_ENV=production refuses to start
-- without them). The table belongs to the service's role, like the rest of
-- the schema, and no other role is granted anything on it.
CREATE TABLE dev_secrets (
    name       text        PRIMARY KEY,
    value      bytea       NOT NULL CHECK (length(value) >= 32),
    created_at timestamptz NOT NULL DEFAULT now()
);
