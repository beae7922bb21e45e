-- SET LOCAL search_path, as a statement that prepares: the migration files
-- use unqualified names, scoped to the schema (path, its quoted name) for
-- this transaction only (never leaking to the pooled session).
SELECT set_config('search_path', ?path::text, true)
