-- The schema's version table. DDL: Postgres parses it when it is prepared
-- but neither analyses nor plans it (platform/sqlq's package comment).
CREATE TABLE IF NOT EXISTS ?schema.schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now())
