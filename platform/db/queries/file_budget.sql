-- The file budget (ReadFileBudget): the server's max_files_per_process,
-- the number of tenant schemas and the tables and indexes of the first.
SELECT current_setting('max_files_per_process')::int,
       (SELECT count(*) FROM central.organizations WHERE schema_name IS NOT NULL),
       (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE c.relkind IN ('r', 'i') AND n.nspname = (
               SELECT schema_name FROM central.organizations WHERE schema_name IS NOT NULL
                ORDER BY id LIMIT 1))
