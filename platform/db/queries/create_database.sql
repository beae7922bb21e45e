-- DDL: the service's database (EnsureDatabase), its quoted name written
-- where a tenant statement's schema would be (sqlq's Pgx). Postgres
-- parses it when it is prepared but neither analyses nor plans it.
CREATE DATABASE ?schema
