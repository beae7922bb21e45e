-- DDL: Postgres parses it when it is prepared but neither analyses nor
-- plans it (platform/sqlq's package comment).
CREATE SCHEMA IF NOT EXISTS ?schema
